"""The byte-level BPE tokenizer against the `tokenizers` package (the reference of RoBERTa's
tokenizer): a vocabulary learned here by its trainer, and 1,200 hostile strings made here from
a fixed seed."""

import random
import unicodedata

import numpy as np
import pytest
import tensorflow as tf
from tokenizers import ByteLevelBPETokenizer, pre_tokenizers

from kbert.tokenizers import BytePairTokenizer
from kbert.tokenizers.byte_level import SPACE, WORD_PATTERN, bytes_to_unicode
from kbert.tokenizers.vocab_learning import learn_byte_pair_vocabulary, write_byte_pair_files
from tests.helpers import as_dataset

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
WORDS = ("the of and to in is was he for it with as his on be at by had are but from or have "
         "not they which one you were her all she there would their we him been has when who "
         "will more no if out so said what up its about into than them can only other new some "
         "could time these two may then do first any my now such like our over man me even most "
         "made after also did many before must through back years where much your way well down "
         "should because each just those people how too little state good very make world still "
         "don't isn't it's we're they've I'm you'll he'd").split()
POOLS = {
    "accents": list("éèêëàâäôöûüçñÉÀÇÑåøæœßÿıİŁłŠšŽžőű") + ["e\u0301", "a\u0308", "n\u0303",
                                                            "Ω\u0342", "\u0301"],
    "cjk": list("東京日本語中文字漢字한국어ひらがなカタカナ　、。「」｛｝ｆｕｌｌ"),
    "emoji": ["😀", "👍🏽", "👩\u200d👩\u200d👧\u200d👦", "🏳\ufe0f\u200d🌈", "🇫🇷", "❤\ufe0f",
              "👨🏻\u200d💻", "🧑\u200d🤝\u200d🧑", "#\ufe0f\u20e3", "\u200d", "\ufe0f"],
    "controls": [chr(c) for c in list(range(0, 32)) + [127] + list(range(0x80, 0xa0))]
    + ["\u200b", "\u200e", "\u2028", "\u2029", "\ufeff", "\u00ad", "\ufffd", "\U000e0041"],
    "spaces": [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2009", "\u202f", "\u1680",
               "\u0085", "\x0b", "\x0c", "\x1c", " " * 7, "\t \t", " \n "],
    "punctuation": list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~¡¿«»—–…‘’“”•·§¶†‡‰′″") + [
        "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "''", "...", "?!", "--"],
    "numbers": ["0", "7", "42", "3.14", "1,000", "٣", "४२", "²", "½", "Ⅻ", "一二三", "𝟙𝟚"],
    "scripts": ["Привет", "مرحبا", "שלום", "नमस्ते", "ሰላም", "Γειά", "ꯃꯤ", "𐌰𐌱", "ᚠᚢᚦ", "ไทย"],
}
INVALID_UTF8 = [b"\xff", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\xaf",
                b"\x80\x80", b"\xf4\x90\x80\x80", b"\xfe\xfe"]


def hostile_strings(count=1200, seed=16):
    """Deterministic strings (some raw bytes with invalid UTF-8) mixing words with every pool:
    each string draws from 1 to 4 pools, some are runs of one piece, a few are long."""
    rng = random.Random(seed)
    names = sorted(POOLS)
    result = []
    for i in range(count):
        pools = rng.sample(names, rng.randint(1, 4))
        parts = []
        for _ in range(rng.randint(1, 14)):
            kind = rng.random()
            if kind < 0.35:
                parts.append(rng.choice(WORDS).capitalize() if rng.random() < 0.2
                             else rng.choice(WORDS))
            else:
                parts.append(rng.choice(POOLS[rng.choice(pools)]))
            if rng.random() < 0.5:
                parts.append(rng.choice([" ", " ", " ", "  ", "\t", "\n", ""]))
        text = "".join(parts)
        if i % 40 == 0:
            text = rng.choice([" ", "\t", "a", "😀", "'s", "\u3000"]) * rng.randint(50, 300) + text
        if i % 7 == 0:
            text = " " + text  # leading spaces
        if i % 11 == 0:
            raw = text.encode("utf-8")
            cut = rng.randint(0, len(raw))
            result.append(raw[:cut] + rng.choice(INVALID_UTF8) + raw[cut:])
        else:
            result.append(text)
    return result + ["", " ", "  ", "a", " a", "  a", "a ", "a  ", "\t\tx", " \tx", "  's",
                     "x\u00a0 y", "\u00a0x", "x\x1c\x1dy", "\x00", "a\x00b"]


def corpus(seed=3, count=600):
    rng = random.Random(seed)
    pieces = WORDS * 3 + [p for pool in POOLS.values() for p in pool]
    return [" ".join(rng.choice(pieces) for _ in range(rng.randint(3, 20)))
            for _ in range(count)]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A byte-level BPE learned by `tokenizers`' own trainer, and its files."""
    trained = ByteLevelBPETokenizer()
    trained.train_from_iterator(corpus(), vocab_size=700, min_frequency=2,
                                special_tokens=SPECIALS, show_progress=False)
    folder = tmp_path_factory.mktemp("bpe")
    vocab, merges = trained.save_model(str(folder))
    assert len(trained.get_vocab()) == 700
    return trained, vocab, merges


def as_text(string):
    return string.decode("utf-8", "replace") if isinstance(string, bytes) else string


def test_ids_equal_the_references_on_hostile_strings(reference):
    trained, vocab, merges = reference
    strings = hostile_strings()
    assert len(strings) > 1000
    tokenizer = BytePairTokenizer(vocab, merges)
    got = tokenizer.tokenize(strings).to_list()
    expected = [e.ids for e in trained.encode_batch([as_text(s) for s in strings])]
    wrong = [(s, g, e) for s, g, e in zip(strings, got, expected) if g != e]
    assert not wrong, f"{len(wrong)} strings differ, e.g. {wrong[:3]}"
    # Not a vocabulary of bytes alone: many merges are used.
    assert sum(map(len, got)) < 0.6 * sum(len(as_text(s).encode()) for s in strings)
    # The detokenized ids are the text again (after the replacement of invalid UTF-8).
    text = tokenizer.detokenize(tf.ragged.constant(got[:200], dtype=tf.int32)).numpy()
    assert [t.decode("utf-8") for t in text] == [as_text(s) for s in strings[:200]]


@pytest.mark.parametrize("strings", [[""], ["", ""], [" "], ["", " ", "a"], ["\t\n"]])
def test_batches_of_empty_or_whitespace_strings_are_the_references(reference, strings):
    """A batch with no word at all (every string empty) once failed in the graph's shifts."""
    trained, vocab, merges = reference
    tokenizer = BytePairTokenizer(vocab, merges)
    assert tokenizer.tokenize(strings).to_list() == [e.ids for e in
                                                     trained.encode_batch(strings)]


def test_add_prefix_space_is_the_references(reference):
    _, vocab, merges = reference
    strings = [s for s in hostile_strings(300, seed=5) if isinstance(s, str)] + ["", " x"]
    trained = ByteLevelBPETokenizer(vocab, merges, add_prefix_space=True)
    tokenizer = BytePairTokenizer(vocab, merges, add_prefix_space=True)
    assert tokenizer.tokenize(strings).to_list() == [e.ids for e in
                                                     trained.encode_batch(strings)]


def test_lowercase_is_the_references(reference):
    """lowercase=True is `tokenizers`' Lowercase normaliser (Python's `str.lower` in the
    graph; the hostile strings hold capitals, accented capitals, Greek, Cyrillic, "İ")."""
    _, vocab, merges = reference
    strings = [s for s in hostile_strings(400, seed=7) if isinstance(s, str)]
    strings += ["HELLO World", "ÉCOLE Ÿ ΓΕΙΆ ПРИВЕТ", "İstanbul"]
    for add_prefix_space in (False, True):
        trained = ByteLevelBPETokenizer(vocab, merges, add_prefix_space=add_prefix_space,
                                        lowercase=True)
        tokenizer = BytePairTokenizer(vocab, merges, add_prefix_space=add_prefix_space,
                                      lowercase=True)
        got = tokenizer.tokenize(strings).to_list()
        expected = [e.ids for e in trained.encode_batch(strings)]
        wrong = [(s, g, e) for s, g, e in zip(strings, got, expected) if g != e]
        assert not wrong, f"{len(wrong)} strings differ, e.g. {wrong[:3]}"
    cased = BytePairTokenizer(vocab, merges).tokenize(["HELLO World"]).to_list()
    assert got[-3] != cased[0]  # the check above can fail: lower-casing changes the ids


def test_starts_word_is_the_space_symbol(reference):
    """A token starts a word when it begins with "Ġ" (the space byte's symbol); with
    add_prefix_space (the pretraining pipeline's setting) a text's first word does too, so
    every word of the text starts at exactly one such token."""
    _, vocab, merges = reference
    tokenizer = BytePairTokenizer(vocab, merges, add_prefix_space=True)
    assert tokenizer.starts_word("\u0120the") and tokenizer.starts_word("\u0120")
    assert not tokenizer.starts_word("the") and not tokenizer.starts_word(".")
    assert not tokenizer.starts_word("<s>")  # special tokens are never selected anyway
    text = "the people who were there, when we met at noon"
    tokens = [tokenizer.id_to_token(i) for i in tokenizer.tokenize(text).numpy()]
    assert sum(map(tokenizer.starts_word, tokens)) == len(text.split())
    assert tokenizer.starts_word(tokens[0]) and len(tokens) > len(text.split())
    first = BytePairTokenizer(vocab, merges).tokenize(text).numpy()[0]
    assert not tokenizer.starts_word(tokenizer.id_to_token(first))  # no prefix space: "the"


def test_character_classes_are_the_references_on_every_code_point():
    """GPT-2's split decides by three classes: letters, numbers, whitespace. On every code
    point to U+2FFFF the reference's and ours agree, but for letters and numbers new in a
    Unicode version after RE2's (unassigned in this Python's tables, older still)."""
    probe = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)

    def theirs(char):
        for kind, lead in (("L", "x"), ("N", "1"), ("O", "!")):
            if len(probe.pre_tokenize_str(lead + char)) == 1:
                return kind
        return "S"

    chars = [chr(c) for c in range(0x30000) if not 0xD800 <= c < 0xE000]
    encoded = tf.constant([c.encode("utf-8") for c in chars])
    letter = tf.strings.regex_full_match(encoded, r"\p{L}").numpy()
    number = tf.strings.regex_full_match(encoded, r"\p{N}").numpy()
    space = tf.strings.regex_full_match(encoded, SPACE).numpy()
    ours = np.where(letter, "L", np.where(number, "N", np.where(space, "S", "O")))
    differ = [c for c, o in zip(chars, ours) if theirs(c) != o]
    assert all(unicodedata.category(c) == "Cn" for c in differ), differ[:10]
    assert len(differ) < 6000  # Unicode 16's new letters and digits
    # The pattern's last class is the rest.
    assert WORD_PATTERN.endswith(r" ?[^\p{L}\p{N}" + SPACE[1:] + "+")


def test_special_tokens_and_interface(reference):
    _, vocab, merges = reference
    tokenizer = BytePairTokenizer(vocab, merges)
    assert (tokenizer.cls_id, tokenizer.pad_id, tokenizer.sep_id, tokenizer.unk_id,
            tokenizer.mask_id) == (0, 1, 2, 3, 4)
    assert tokenizer.vocabulary_size == 700 and tokenizer.id_to_token(4) == "<mask>"
    assert tokenizer.vocabulary[5:261] == sorted(bytes_to_unicode())  # the trainer's order
    text = ["the <mask> of</s>", "<s>he <mask>"]
    split = tokenizer.tokenize(text).to_list()
    assert not set(tokenizer.special_ids) & {i for row in split for i in row}
    kept = BytePairTokenizer(vocab, merges, split_special_tokens=False)
    the, of, he = (tokenizer.tokenize(w).numpy().tolist() for w in ("the", " of", "he"))
    # As RoBERTa's tokenizer: "<mask>" takes the space before it (lstrip), "</s>" does not.
    assert kept.tokenize(text).to_list() == [the + [4] + of + [2], [0] + he + [4]]
    plain = BytePairTokenizer(vocab, merges, split_special_tokens=False, lstrip_mask=False)
    assert plain.tokenize(["he <mask>"]).to_list() == [he + tokenizer.tokenize(" ").numpy()
                                                       .tolist() + [4]]
    assert tokenizer.tokenize(tf.constant("the of")).numpy().tolist() == the + of
    for tokenizer_ in (tokenizer, kept):  # any rank, as WordPieceTokenizer
        assert tokenizer_.tokenize([["the of"], ["he"]]).to_list() == [[the + of], [he]]
    with pytest.raises(ValueError, match="lacks the special tokens"):
        BytePairTokenizer({"a": 0}, [])
    with pytest.raises(ValueError, match="names a token that the vocabulary lacks"):
        BytePairTokenizer(vocab, [("zz", "qq")])


def test_inside_tf_data_and_a_saved_model(reference, tmp_path):
    _, vocab, merges = reference
    tokenizer = BytePairTokenizer(vocab, merges)
    texts = ["the people 😀", "  ", "Привет, world's"]
    expected = tokenizer.tokenize(texts).to_list()
    dataset = tf.data.Dataset.from_tensor_slices(texts).map(tokenizer.tokenize)
    assert [x.numpy().tolist() for x in dataset] == expected

    class Module(tf.Module):
        def __init__(self):
            super().__init__()
            self.tokenizer = tokenizer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def encode(self, text):
            return self.tokenizer.tokenize(text).to_tensor(default_value=-1)

    tf.saved_model.save(Module(), str(tmp_path / "saved"))
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    got = [[i for i in row if i >= 0] for row in loaded.encode(tf.constant(texts)).numpy()]
    assert got == expected


def test_learned_vocabulary_tokenizes_as_the_trainers(tmp_path):
    texts = corpus(seed=9, count=300)
    documents = as_dataset([texts[i:i + 10] for i in range(0, len(texts), 10)])
    vocabulary, merges = learn_byte_pair_vocabulary(documents, vocab_size=600)
    assert vocabulary[:5] == SPECIALS and len(vocabulary) == 600
    assert len(merges) == 600 - 5 - 256
    vocab_path, merges_path = write_byte_pair_files(vocabulary, merges, str(tmp_path))
    reference = ByteLevelBPETokenizer(vocab_path, merges_path)
    tokenizer = BytePairTokenizer(vocabulary, merges)
    strings = [s for s in hostile_strings(200, seed=1) if isinstance(s, str)]
    assert tokenizer.tokenize(strings).to_list() == [e.ids for e in
                                                     reference.encode_batch(strings)]
    assert BytePairTokenizer(vocab_path, merges_path).merges == merges
    with pytest.raises(ValueError, match="vocab_size must be an integer > 261"):
        learn_byte_pair_vocabulary(documents, vocab_size=100)
