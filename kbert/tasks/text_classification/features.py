"""Text classification and regression features: texts and text pairs -> `(features, labels)`.

Tokenization and packing run in the graph (`tf.data.Dataset.map` on batches), as in the
exported SavedModels (the tokenizer's `pack`): `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`
(RoBERTa's pairs `<s> A </s></s> B </s>`, as RoBERTa packs them), pairs truncated longest
first (BERT's `_truncate_seq_pair`), padded to a static `sequence_length`.
"""

import dataclasses
from typing import Optional

import numpy as np
import tensorflow as tf

from kbert.tasks.datasets import AUTOTUNE, LABELS, DataError, batched, check_int
from kbert.tasks.text_classification.data import ClassificationData, ClassificationExample
from kbert.tokenizers.words import utf8


def as_classification_data(data, label_names=None, regression=False):
    """`ClassificationData`, from itself, a list of `ClassificationExample`, a list of texts
    or a list of (text_a, text_b) pairs (unlabelled)."""
    if isinstance(data, ClassificationData):
        return data
    examples = []
    for i, item in enumerate(data):
        if isinstance(item, ClassificationExample):
            examples.append(item)
        elif isinstance(item, str):
            examples.append(ClassificationExample(item, origin=f"text {i}"))
        else:
            text_a, text_b = item
            examples.append(ClassificationExample(text_a, text_b, origin=f"text {i}"))
    return ClassificationData(examples, label_names, regression, "texts")


def _columns(data):
    examples = data.examples
    if not examples:
        raise DataError(f"{data.source or 'the data'}: no examples.")
    pairs = {example.text_b is not None for example in examples}
    if len(pairs) > 1:
        odd = next(e for e in examples if (e.text_b is None) != (examples[0].text_b is None))
        raise DataError(f"{odd.origin}: mixes single texts and text pairs; the first example "
                        f"{'has' if examples[0].text_b is not None else 'has no'} a second text.")
    for example in examples:
        for text in (example.text_a, example.text_b):
            if text is not None and (not isinstance(text, str) or not text.strip()):
                raise DataError(f"{example.origin}: empty text; expected a non-empty string, "
                                f"got {text!r}.")
    columns = {"text_a": np.array(utf8(e.text_a for e in examples), dtype=object)}
    if examples[0].text_b is not None:
        columns["text_b"] = np.array(utf8(e.text_b for e in examples), dtype=object)
    labelled = {example.label is not None for example in examples}
    if labelled == {True}:
        if data.regression:
            columns[LABELS] = np.array([e.label for e in examples], np.float32)
        else:
            count = len(data.label_names or ())
            for example in examples:
                label = example.label
                if not (isinstance(label, (int, np.integer)) and 0 <= label < count):
                    raise DataError(f"{example.origin}: label {example.label!r} is not an index "
                                    f"into label_names {data.label_names}.")
            columns[LABELS] = np.array([e.label for e in examples], np.int32)
    elif labelled == {True, False}:
        odd = next(e for e in examples if e.label is None)
        raise DataError(f"{odd.origin}: no label, while other examples have one.")
    return columns


@dataclasses.dataclass
class EncodedClassification:
    """A classification split as arrays, for `fit` and `predict` without tf.data tokenizing
    again at every pass (the twin of `EncodedTagging` and `EncodedQuestions`).

    Attributes:
        features: `token_ids`, `segment_ids`, `padding_mask`, int32 [N, S].
        labels: {"labels": int32 or float32 [N]}; None without labels.
    """

    features: dict
    labels: Optional[dict]


def encode_classification(data, tokenizer, sequence_length=128):
    """`data` (as `classification_dataset` takes it) tokenized and packed once, in order."""
    rows = list(classification_dataset(data, tokenizer, sequence_length,
                                       batch_size=1024).as_numpy_iterator())
    labelled = isinstance(rows[0], tuple)
    features = [row[0] if labelled else row for row in rows]
    features = {key: np.concatenate([f[key] for f in features]) for key in features[0]}
    labels = ({key: np.concatenate([row[1][key] for row in rows]) for key in rows[0][1]}
              if labelled else None)
    return EncodedClassification(features, labels)


def pack_texts(tokenizer, texts, sequence_length):
    """In the graph: [first] or [first, second] strings [B] -> `token_ids`, `segment_ids`,
    `padding_mask` int32 [B, sequence_length], packed by the tokenizer's layout, a pair
    truncated longest first."""
    # One tokenizer call for both texts: half the graph to build.
    ids = tokenizer.tokenize(tf.concat(texts, 0))
    rows = tf.shape(texts[0], out_type=tf.int64)[0]
    segments = [ids[i * rows : (i + 1) * rows] for i in range(len(texts))]
    features = tokenizer.pack(segments, sequence_length)
    for tensor in features.values():  # the ragged ops lose the static batch size
        tensor.set_shape([texts[0].shape[0], sequence_length])
    return features


def classification_dataset(data, tokenizer, sequence_length=128, batch_size=32,
                           training=False, shuffle_buffer=10_000, seed=0, drop_remainder=None,
                           repeat=False):
    """Batches for a text classifier: `(features, {"labels"})`, or `features` alone when the
    data has no labels.

    Args:
        data: `ClassificationData` (`data.read_classification_file`, `data.read_tfds`), or a list of
            texts or of (text_a, text_b) pairs.
        tokenizer: a kbert tokenizer (`tokenize`, `cls_id`, `sep_id`, `pad_id`, and its
            `layout`: RoBERTa's pairs get two separators and segment ids all 0).
        sequence_length: the static length S of `token_ids`, `segment_ids`, `padding_mask`.
        training: shuffle (buffer `shuffle_buffer`, `seed`), and drop the last partial batch
            unless `drop_remainder` says otherwise.
        repeat: an endless stream (each pass reshuffled from `seed`).
    Returns:
        A `tf.data.Dataset`: features int32 [B, S]; `labels` int32 [B] (indices into
        `data.label_names`) or float32 [B] for regression.
    """
    data = as_classification_data(data)
    columns = _columns(data)
    pair = "text_b" in columns
    # Room for the special tokens and at least one piece of each text.
    check_int("sequence_length", sequence_length, tokenizer.special_count(pair) + 1 + pair)
    dataset = tf.data.Dataset.from_tensor_slices(columns)
    dataset = batched(dataset, batch_size, training, shuffle_buffer, seed, drop_remainder,
                      repeat)

    def encode(batch):
        texts = [batch["text_a"]] + ([batch["text_b"]] if "text_b" in batch else [])
        features = pack_texts(tokenizer, texts, sequence_length)
        if LABELS in batch:
            return features, {LABELS: batch[LABELS]}
        return features

    return dataset.map(encode, num_parallel_calls=AUTOTUNE, deterministic=True).prefetch(
        AUTOTUNE)

