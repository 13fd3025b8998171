"""Token classification: labels on first wordpieces, predictions per word, entities by character."""

import numpy as np
import pytest

from kbert.tasks.datasets import FEATURE_KEYS, TAGGING_LABEL_KEYS, DataError
from kbert.tasks.token_classification.data import (
    TaggingData,
    TaggingExample,
    encode_tagging,
    tagging_dataset,
)
from kbert.tasks.token_classification.decode import Entity, decode_entities
from kbert.tokenizers.words import Word, join_words
from tests.tokenizers.test_alignment import tiny_tokenizer

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]


def sentence(*pairs, origin="s"):
    words, tags = zip(*pairs)
    return TaggingExample(tuple(words), tuple(TAGS.index(t) for t in tags), origin)


# A word of many pieces, an [UNK] word, a word with no pieces at all (a lone accent),
# accented and CJK words, punctuation inside a word.
HARD = sentence(("Antidisestablishmentarianism", "B-MISC"), ("😀🎉", "B-PER"),
                ("\u0301", "I-PER"), ("Zoë", "B-PER"), ("東京", "B-LOC"), ("U.S.", "B-LOC"),
                ("in", "O"), ("New", "B-LOC"), ("York", "I-LOC"))


def perfect_logits(encoded):
    """Scores that put each position's gold label first (what a perfect model outputs)."""
    labels = encoded.labels["labels"]
    logits = np.zeros(labels.shape + (len(TAGS),), np.float32)
    np.put_along_axis(logits, labels[..., None], 5.0, axis=-1)
    return logits


def test_labels_sit_on_the_first_piece_of_each_word():
    tokenizer = tiny_tokenizer()
    encoded = encode_tagging(TaggingData([HARD], TAGS), tokenizer, sequence_length=64)
    vocabulary = tokenizer.vocabulary
    ids = encoded.features["token_ids"][0]
    length = int(encoded.features["padding_mask"][0].sum())
    tokens = [vocabulary[i] for i in ids[:length]]
    first = np.flatnonzero(encoded.labels["label_weights"][0])
    # 28 letter pieces, [UNK], no piece for the accent, z ##o ##e, 東 京, u . s .
    assert tokens[1:4] == ["a", "##n", "##t"] and tokens[29] == "[UNK]"
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and tokens[-3:-1] == ["new", "york"]
    assert first.tolist() == [1, 29, 30, 33, 35, 39, 40, 41]
    assert [vocabulary[ids[p]] for p in first] == ["a", "[UNK]", "z", "東", "u", "in", "new",
                                                   "york"]
    labels = encoded.labels["labels"][0]
    assert [TAGS[labels[p]] for p in first] == ["B-MISC", "B-PER", "B-PER", "B-LOC", "B-LOC",
                                                "O", "B-LOC", "I-LOC"]
    # Other pieces, specials and padding weigh nothing.
    weights = encoded.labels["label_weights"][0]
    assert weights.sum() == 8 and weights.dtype == np.float32
    assert encoded.word_ids[0][first].tolist() == [0, 1, 3, 4, 5, 6, 7, 8]


def test_word_predictions_and_entities_round_trip():
    tokenizer = tiny_tokenizer()
    encoded = encode_tagging(TaggingData([HARD], TAGS), tokenizer, sequence_length=64)
    (words,) = encoded.word_predictions(perfect_logits(encoded))
    gold = [TAGS[t] for t in HARD.tags]
    assert words == gold[:2] + [None] + gold[3:]  # the word without pieces: no prediction
    (entities,) = encoded.entities(perfect_logits(encoded))
    text = encoded.alignments[0].text
    assert entities == [
        Entity("MISC", 0, 28, "Antidisestablishmentarianism"),
        Entity("PER", 29, 31, "😀🎉"),
        Entity("PER", 34, 37, "Zoë"),
        Entity("LOC", 38, 40, "東京"),
        Entity("LOC", 41, 45, "U.S."),
        Entity("LOC", 49, 57, "New York"),
    ]
    assert all(text[e.start : e.end] == e.text for e in entities)
    # Scores on the non-first pieces are ignored.
    noisy = perfect_logits(encoded)
    noisy[encoded.labels["label_weights"] == 0] = np.eye(len(TAGS))[3] * 9
    assert encoded.word_predictions(noisy)[0] == words


def test_raw_texts_give_entities_in_the_original_text():
    tokenizer = tiny_tokenizer()
    text = "  Zoë   Müller\tvisited 東京 (Japan)\u200b… 😀  "
    encoded = encode_tagging([text], tokenizer, sequence_length=40)
    assert encoded.labels is None
    alignment = encoded.alignments[0]
    assert [w.text for w in alignment.words] == ["Zoë", "Müller", "visited", "東", "京", "(",
                                                 "Japan", ")", "…", "😀"]
    tags = ["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "O", "B-LOC", "O", "O", "B-MISC"]
    predictions = np.zeros(encoded.word_ids.shape, np.int32)
    for position, word in enumerate(encoded.word_ids[0]):
        if word >= 0:
            predictions[0, position] = TAGS.index(tags[word])
    encoded.label_names = TAGS
    assert encoded.word_predictions(predictions)[0] == tags
    assert encoded.entities(predictions)[0] == [
        Entity("PER", 2, 14, "Zoë   Müller"), Entity("LOC", 23, 25, "東京"),
        Entity("LOC", 27, 32, "Japan"), Entity("MISC", 36, 37, "😀")]


def test_long_sentences_lose_their_last_words():
    tokenizer = tiny_tokenizer()
    example = sentence(("new", "B-LOC"), ("york", "I-LOC"), ("abc", "O"), ("in", "O"))
    encoded = encode_tagging([example], tokenizer, sequence_length=6)  # 4 pieces fit
    assert encoded.truncated_words == 1  # "abc" is cut inside (keeps its label), "in" is gone
    assert encoded.labels["label_weights"][0].tolist() == [0, 1, 1, 1, 0, 0]
    assert encoded.word_predictions(np.zeros((1, 6), np.int32))[0][-1] is None


@pytest.mark.parametrize("scheme, tags, expected", [
    ("IOB2", ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC"],
     [("PER", 0, 1), ("LOC", 3, 3), ("LOC", 4, 5)]),
    # Lenient (seqeval's default): an I- that continues nothing starts an entity (IOB1).
    ("BIO", ["I-PER", "I-PER", "I-LOC", "O", "I-LOC"],
     [("PER", 0, 1), ("LOC", 2, 2), ("LOC", 4, 4)]),
    ("IOB1", ["I-PER", "B-PER", "O", "O", "O"], [("PER", 0, 0), ("PER", 1, 1)]),
    ("BIOES", ["B-PER", "I-PER", "E-PER", "S-LOC", "S-LOC", "B-ORG", "E-ORG"],
     [("PER", 0, 2), ("LOC", 3, 3), ("LOC", 4, 4), ("ORG", 5, 6)]),
    ("BIOES", ["B-PER", "E-PER", "E-PER", "I-LOC", "O", "B-ORG", "I-ORG", "I-ORG"],
     [("PER", 0, 1), ("PER", 2, 2), ("LOC", 3, 3), ("ORG", 5, 7)]),
    ("BILOU", ["U-PER", "B-LOC", "L-LOC", "O", "O", "O"], [("PER", 0, 0), ("LOC", 1, 2)]),
    ("IOB2", ["PER", "PER", "O", "LOC", None], [("PER", 0, 1), ("LOC", 3, 3)]),  # IO tags
])
def test_decode_entities_schemes(scheme, tags, expected):
    words = ["w%d" % i for i in range(len(tags))]
    text, spans = join_words(words)
    entities = decode_entities(tags, spans, scheme)
    assert [(e.type, int(e.text.split()[0][1:]), int(e.text.split()[-1][1:]))
            for e in entities] == expected
    assert all(text[e.start : e.end] == e.text for e in entities)


def test_decode_entities_errors_and_text_without_original():
    words = [Word("New", 0, 3), Word("York", 6, 10)]
    assert decode_entities(["B-LOC", "I-LOC"], words) == [Entity("LOC", 0, 10, "New   York")]
    with pytest.raises(ValueError, match="not of the IOB2 scheme"):
        decode_entities(["S-LOC", "O"], words, "IOB2")
    with pytest.raises(ValueError, match="Unknown scheme"):
        decode_entities(["O", "O"], words, "XYZ")
    with pytest.raises(ValueError, match="1 tags for 2 words"):
        decode_entities(["O"], words)


def test_tagging_dataset_from_a_conll_file(tmp_path):
    from kbert.tasks.token_classification.data import read_conll

    path = tmp_path / "train.txt"
    path.write_text("EU NNP B-ORG\nrejects VBZ O\n\nPeter NNP B-PER\nBlackburn NNP I-PER\n")
    data = read_conll(str(path))
    dataset = tagging_dataset(data, tiny_tokenizer(), sequence_length=24, batch_size=2,
                              training=True)
    features, labels = next(iter(dataset))
    assert set(features) == set(FEATURE_KEYS) and set(labels) == set(TAGGING_LABEL_KEYS)
    assert features["token_ids"].shape == (2, 24) and labels["labels"].dtype == "int32"
    assert labels["label_weights"].dtype == "float32"
    assert sorted(labels["label_weights"].numpy().sum(1).tolist()) == [2.0, 2.0]
    with pytest.raises(DataError, match="s7: 2 words but 1 tags"):
        encode_tagging([TaggingExample(("a", "b"), (0,), "s7")], tiny_tokenizer())
