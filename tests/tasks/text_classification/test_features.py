"""Text classification inputs: single texts and pairs, labels, regression, static shapes."""

import types

import numpy as np
import pytest

from kbert.tasks.datasets import CLASSIFICATION_LABEL_KEYS, FEATURE_KEYS, DataError
from kbert.tasks.text_classification.data import ClassificationData, ClassificationExample
from kbert.tasks.text_classification.features import classification_dataset
from kbert.tokenizers.packing import pack_segments
from tests.tokenizers.test_alignment import tiny_tokenizer


def truncate_seq_pair(a, b, max_length):
    """google-research/bert's run_classifier._truncate_seq_pair."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_length:
        (a if len(a) > len(b) else b).pop()
    return a, b


def test_pairs_are_truncated_longest_first_as_bert():
    import tensorflow as tf

    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 14, (200, 2))
    a = tf.ragged.constant([list(range(100, 100 + n)) for n, _ in lengths], tf.int32)
    b = tf.ragged.constant([list(range(200, 200 + n)) for _, n in lengths], tf.int32)
    ids = types.SimpleNamespace(cls_id=2, sep_id=3, pad_id=0)  # BERT's one separator
    for sequence_length in (5, 8, 13, 30):
        packed = {k: v.numpy().tolist()
                  for k, v in pack_segments(ids, [a, b], sequence_length).items()}
        for row, (la, lb) in enumerate(lengths):
            ta, tb = truncate_seq_pair(range(100, 100 + la), range(200, 200 + lb),
                                       sequence_length - 3)
            expected = [2] + ta + [3] + tb + [3]
            padding = [0] * (sequence_length - len(expected))
            assert packed["token_ids"][row] == expected + padding
            assert packed["segment_ids"][row] == [0] * (len(ta) + 2) + [1] * (len(tb) + 1) + padding
            assert packed["padding_mask"][row] == [1] * len(expected) + padding


def pair_data():
    texts = [("the big city", "new york is big"), ("paris", "tokyo"), ("who is muller", "the city"),
             ("what", "where"), ("a b c d e f g h i j", "x")]
    return ClassificationData(
        [ClassificationExample(a, b, i % 3, f"row {i}") for i, (a, b) in enumerate(texts)],
        ["x", "y", "z"], False, "pairs")


@pytest.mark.slow
def test_pair_dataset_features_and_labels():
    tokenizer = tiny_tokenizer()
    data = pair_data()
    batches = list(classification_dataset(data, tokenizer, sequence_length=12, batch_size=2))
    # Every example once, in order, the last batch kept when not training.
    assert [f["token_ids"].shape[0] for f, _ in batches] == [2, 2, 1]
    features, labels = batches[0]
    assert set(features) == set(FEATURE_KEYS) and set(labels) == set(CLASSIFICATION_LABEL_KEYS)
    vocabulary = tokenizer.vocabulary
    tokens = [vocabulary[i] for i in features["token_ids"][0].numpy()]
    assert tokens == ["[CLS]", "the", "big", "city", "[SEP]", "new", "york", "is", "big",
                      "[SEP]", "[PAD]", "[PAD]"]
    assert features["segment_ids"][0].numpy().tolist() == [0] * 5 + [1] * 5 + [0] * 2
    assert features["padding_mask"][0].numpy().tolist() == [1] * 10 + [0] * 2
    # The last pair is truncated longest first: 10 + 1 pieces -> 8 + 1.
    last = [vocabulary[i] for i in batches[2][0]["token_ids"][0].numpy()]
    assert last == ["[CLS]", "a", "b", "c", "d", "e", "f", "g", "h", "[SEP]", "x", "[SEP]"]
    assert [y["labels"].numpy().tolist() for _, y in batches] == [[0, 1], [2, 0], [1]]
    assert all(t.dtype == "int32" for t in (*features.values(), labels["labels"]))


@pytest.mark.slow
def test_training_batches_have_a_static_shape_and_are_shuffled():
    tokenizer = tiny_tokenizer()
    dataset = classification_dataset(pair_data(), tokenizer, sequence_length=16, batch_size=2,
                                     training=True, seed=3)
    features, labels = dataset.element_spec
    assert features["token_ids"].shape.as_list() == [2, 16]
    assert labels["labels"].shape.as_list() == [2]
    batches = list(dataset)
    assert len(batches) == 2  # 5 examples: the partial batch is dropped
    first_pieces = [int(f["token_ids"][i, 1]) for f, _ in batches for i in range(2)]
    in_order = [tokenizer.vocabulary.index(w) for w in ("the", "paris", "who", "what")]
    assert first_pieces != in_order


@pytest.mark.slow
def test_single_texts_regression_and_unlabelled():
    tokenizer = tiny_tokenizer()
    data = ClassificationData([ClassificationExample("new york", None, 3.8),
                               ClassificationExample("paris", None, 0.5)], None, True, "sts")
    features, labels = next(iter(classification_dataset(data, tokenizer, 6, batch_size=2)))
    assert labels["labels"].dtype == "float32"
    assert np.allclose(labels["labels"].numpy(), [3.8, 0.5])
    assert features["segment_ids"].numpy().max() == 0
    assert [tokenizer.vocabulary[i] for i in features["token_ids"][0].numpy()] == [
        "[CLS]", "new", "york", "[SEP]", "[PAD]", "[PAD]"]
    # Raw texts: features only (prediction).
    features = next(iter(classification_dataset(["the city", "paris"], tokenizer, 8)))
    assert set(features) == set(FEATURE_KEYS)
    assert features["padding_mask"].numpy().sum(1).tolist() == [4, 3]


def test_bad_examples_are_named():
    tokenizer = tiny_tokenizer()
    mixed = ClassificationData([ClassificationExample("a", "b", 0, "f.tsv: line 2"),
                                ClassificationExample("c", None, 1, "f.tsv: line 3")],
                               ["0", "1"])
    with pytest.raises(DataError, match="f.tsv: line 3.*mixes"):
        classification_dataset(mixed, tokenizer)
    unknown = ClassificationData([ClassificationExample("a", None, 2, "f.tsv: line 2")],
                                 ["0", "1"])
    with pytest.raises(DataError, match="f.tsv: line 2.*label 2"):
        classification_dataset(unknown, tokenizer)
    empty = ClassificationData([ClassificationExample(" ", None, 0, "f.tsv: line 4")], ["0"])
    with pytest.raises(DataError, match="f.tsv: line 4.*empty text"):
        classification_dataset(empty, tokenizer)
    with pytest.raises(ValueError, match="sequence_length"):
        classification_dataset(pair_data(), tokenizer, sequence_length=4)


@pytest.mark.slow
def test_files_to_batches(tmp_path):
    from kbert.tasks.text_classification.data import read_classification_file

    path = tmp_path / "train.tsv"
    path.write_text("sentence\tlabel\nthe big city\tpositive\nparis\tnegative\n")
    data = read_classification_file(str(path), "sentence", label_column="label")
    features, labels = next(iter(classification_dataset(data, tiny_tokenizer(), 8)))
    assert data.label_names == ["negative", "positive"]
    assert labels["labels"].numpy().tolist() == [1, 0]
    assert features["padding_mask"].numpy().sum(1).tolist() == [5, 3]


def test_encode_classification_is_the_dataset_as_arrays_in_order():
    """What run_finetuning fits and predicts on: the same rows as `classification_dataset`,
    unshuffled and concatenated, labels included (None without labels)."""
    from kbert.tasks.text_classification.features import encode_classification

    tokenizer = tiny_tokenizer()
    # 1,030 rows: more than one of its batches of 1,024; pairs whose lengths all differ.
    examples = [ClassificationExample(f"the city {'big ' * (i % 11)}", "new york " * (1 + i % 5),
                                      i % 2, f"row {i}") for i in range(1030)]
    data = ClassificationData(examples, ["no", "yes"])
    encoded = encode_classification(data, tokenizer, sequence_length=16)
    batches = list(classification_dataset(data, tokenizer, 16, batch_size=7)
                   .as_numpy_iterator())
    for key in FEATURE_KEYS:
        np.testing.assert_array_equal(
            encoded.features[key], np.concatenate([f[key] for f, _ in batches]))
    np.testing.assert_array_equal(encoded.labels["labels"], [i % 2 for i in range(1030)])
    unlabelled = encode_classification(["the city", "new york is big"], tokenizer, 16)
    assert unlabelled.labels is None and unlabelled.features["token_ids"].shape == (2, 16)
