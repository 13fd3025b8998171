import numpy as np
import pytest
import tensorflow as tf

from kbert.tokenizers import WordPieceTokenizer, read_vocabulary

VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "quick", "brown", "fox", "un", "##aff", "##able", "runs", "run", "##s",
    ".", ",", "!", "cafe", "Fox", "The",
]


@pytest.fixture
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n")
    return str(path)


def ids(tokens):
    return [VOCAB.index(t) for t in tokens]


def test_special_ids_come_from_the_vocab(vocab_file):
    shuffled = VOCAB[5:8] + VOCAB[:5] + VOCAB[8:]
    tokenizer = WordPieceTokenizer(shuffled)
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id) == (3, 4, 5, 6, 7)
    assert WordPieceTokenizer(vocab_file).vocabulary == VOCAB
    assert read_vocabulary(vocab_file) == VOCAB


def test_wordpiece_split_and_lowercase(vocab_file):
    tokenizer = WordPieceTokenizer(vocab_file, lowercase=True)
    got = tokenizer.tokenize(["The QUICK fox, unaffable!", "Café runs zebra."]).to_list()
    assert got == [
        ids(["the", "quick", "fox", ",", "un", "##aff", "##able", "!"]),
        ids(["cafe", "runs", "[UNK]", "."]),
    ]
    cased = WordPieceTokenizer(vocab_file, lowercase=False)
    assert cased.tokenize(["The Fox the"]).to_list() == [ids(["The", "Fox", "the"])]


def test_detokenize(vocab_file):
    tokenizer = WordPieceTokenizer(vocab_file)
    text = tokenizer.detokenize(tokenizer.tokenize(["the fox unaffable"]))
    assert text.numpy().tolist() == [b"the fox unaffable"]


def test_missing_special_tokens_and_duplicates():
    with pytest.raises(ValueError, match=r"lacks the special tokens \['\[MASK\]'\]"):
        WordPieceTokenizer([t for t in VOCAB if t != "[MASK]"])
    with pytest.raises(ValueError, match=r"repeats tokens: \['fox'\]"):
        WordPieceTokenizer(VOCAB + ["fox"])
    with pytest.raises(FileNotFoundError, match="no/such/vocab.txt"):
        WordPieceTokenizer("no/such/vocab.txt")


def test_inside_tf_data(vocab_file):
    tokenizer = WordPieceTokenizer(vocab_file)
    dataset = tf.data.Dataset.from_tensor_slices(["the fox", "quick brown fox runs", ""])
    dataset = dataset.map(tokenizer.tokenize).map(lambda t: tf.shape(t)[0])
    assert [int(n) for n in dataset] == [2, 4, 0]


def test_inside_a_saved_model(vocab_file, tmp_path):
    tokenizer = WordPieceTokenizer(vocab_file)

    class Module(tf.Module):
        def __init__(self):
            super().__init__()
            self.tokenizer = tokenizer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def encode(self, text):
            return self.tokenizer.tokenize(text).to_tensor(default_value=tokenizer.pad_id)

    path = str(tmp_path / "saved")
    tf.saved_model.save(Module(), path)
    import os

    os.remove(vocab_file)  # the graph needs no file at run time
    loaded = tf.saved_model.load(path)
    out = loaded.encode(tf.constant(["the fox", "unaffable", "the\x00 fox"])).numpy()
    np.testing.assert_array_equal(out, [ids(["the", "fox", "[PAD]"]),
                                        ids(["un", "##aff", "##able"]),
                                        ids(["the", "fox", "[PAD]"])])  # a NUL costs nothing


def test_special_token_literals_are_split_unless_asked(vocab_file):
    text = ["the [SEP] fox[MASK]", "[sep] [CLS]the\x00 fox [PAD]", ""]
    split = WordPieceTokenizer(vocab_file).tokenize(text).to_list()
    assert not {2, 3, 4} & {i for row in split for i in row}  # "[", "sep", "]": [UNK]s here
    kept = WordPieceTokenizer(vocab_file, split_special_tokens=False)
    assert kept.tokenize(text).to_list() == [
        ids(["the", "[SEP]", "fox", "[MASK]"]),
        ids(["[UNK]", "[UNK]", "[UNK]", "[CLS]", "the", "fox", "[PAD]"]),  # "[sep]" is text
        [],
    ]
    assert kept.tokenize("fox [SEP]").numpy().tolist() == ids(["fox", "[SEP]"])
    assert kept.tokenize([["fox [SEP]"], ["the"]]).to_list() == [[ids(["fox", "[SEP]"])],
                                                                 [ids(["the"])]]


def test_words_longer_than_max_chars_per_word_are_one_unk():
    vocabulary = VOCAB + ["\u0430", "##\u0430"]  # Cyrillic a: 2 bytes
    tokenizer = WordPieceTokenizer(vocabulary)
    a = vocabulary.index("\u0430")
    # BERT counts characters, not bytes: 60 letters (120 bytes) are still a word.
    assert tokenizer.tokenize(["\u0430" * 60]).to_list() == [[a] + [a + 1] * 59]
    assert tokenizer.tokenize(["fox " + "\u0430" * 101 + ", the", "b" * 101]).to_list() == [
        ids(["fox", "[UNK]", ",", "the"]), ids(["[UNK]"])]
    assert WordPieceTokenizer(vocabulary, max_chars_per_word=4).tokenize(
        ["quick fox"]).to_list() == [ids(["[UNK]", "fox"])]
    for bad in (0, 1000, 2.0, True):
        with pytest.raises(ValueError, match="max_chars_per_word must be an integer"):
            WordPieceTokenizer(VOCAB, max_chars_per_word=bad)


def test_word_start_rule_and_placeholders():
    """"##" pieces continue a word (whole-word masking goes by it); bracketed tokens are
    placeholders that masking never predicts nor draws."""
    tokenizer = WordPieceTokenizer(VOCAB + ["[unused0]"])
    assert [tokenizer.starts_word(t) for t in ("un", "##aff", "##able", ".", "the")] == [
        True, False, False, True, True]
    assert [tokenizer.is_placeholder(t) for t in ("[unused0]", "[MASK]", "the", "[", "##s")] == [
        True, True, False, False, False]
