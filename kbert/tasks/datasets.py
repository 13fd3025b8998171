"""What the task folders' datasets share (`kbert.tasks.<task>.data`, `.features`): the feature
and label names, `DataError`, batching; labels as indices (`label_indices`); and the rows of
TFDS builders (`TfdsTask`, `builder_rows`). Packing into model inputs is the tokenizer's
(`Tokenizer.pack`, `kbert.tokenizers.packing`).

Every task dataset yields `(features, labels)` for `model.fit`, dicts of static-shape tensors:

- features (all tasks): `token_ids`, `segment_ids`, `padding_mask`, int32 [B, S];
- classification: `labels` int32 [B] (float32 [B] for regression);
- tagging: `labels` int32 [B, S] and `label_weights` float32 [B, S] (1 on the first
  wordpiece of each word, 0 on the other pieces, the specials and the padding);
- question answering: `start_positions`, `end_positions` int32 [B] (0 = [CLS]: no answer,
  or the answer is not whole in this window).

Records keep their `origin` ("train.tsv: line 12", "conll2003 (train) example 4") so that an
error found later still names the row.
"""

import typing

import numpy as np
import tensorflow as tf

from kbert import _extras
from kbert.tokenizers.packing import PADDING_MASK, SEGMENT_IDS, TOKEN_IDS

LABELS = "labels"
LABEL_WEIGHTS = "label_weights"
START_POSITIONS = "start_positions"
END_POSITIONS = "end_positions"

FEATURE_KEYS = (TOKEN_IDS, SEGMENT_IDS, PADDING_MASK)
CLASSIFICATION_LABEL_KEYS = (LABELS,)
TAGGING_LABEL_KEYS = (LABELS, LABEL_WEIGHTS)
QUESTION_ANSWERING_LABEL_KEYS = (START_POSITIONS, END_POSITIONS)

AUTOTUNE = tf.data.AUTOTUNE


class DataError(ValueError):
    """Bad task data; the message names the file (or TFDS dataset) and the row."""


def check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def batched(data, batch_size, training, shuffle_buffer, seed, drop_remainder, repeat):
    """Shuffles (when training), batches and prefetches a dataset of examples.

    `drop_remainder=None` drops the last partial batch when training (static batch size,
    TPU) and keeps it otherwise (every example predicted).
    """
    check_int("batch_size", batch_size, 1)
    if drop_remainder is None:
        drop_remainder = bool(training)
    if repeat:
        data = data.repeat()
    if training and shuffle_buffer:
        data = data.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=not repeat)
    return data.batch(batch_size, drop_remainder=drop_remainder)


def arrays_dataset(features, labels, batch_size=32, training=False, shuffle_buffer=10_000,
                   seed=0, drop_remainder=None, repeat=False):
    """Batches of `(features, labels)` (or `features` alone when `labels` is None) from dicts
    of numpy arrays that share their first dimension."""
    elements = features if labels is None else (features, labels)
    data = tf.data.Dataset.from_tensor_slices(elements)
    data = batched(data, batch_size, training, shuffle_buffer, seed, drop_remainder, repeat)
    return data.prefetch(AUTOTUNE)


# === Labels as indices into the data's `label_names` (floats for regression) ===


def _is_number(value):
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _is_integral(value):
    if isinstance(value, str):
        return value.strip().lstrip("+-").isdigit()
    return isinstance(value, int)


def label_indices(raw_labels, origins, label_names=None, regression=None):
    """Raw labels (strings or numbers) -> (labels, label_names, regression).

    Regression when asked, or (`regression=None`) when every label is a number and some is not
    an integer ("3.800"): labels become floats. Else the names are `label_names`, or the
    distinct labels sorted (numerically when all are integers), and each label its index.
    """
    if regression is None:
        regression = (label_names is None and bool(raw_labels)
                      and all(_is_number(v) for v in raw_labels)
                      and not all(_is_integral(v) for v in raw_labels))
    if regression:
        labels = []
        for value, origin in zip(raw_labels, origins):
            if not _is_number(value):
                raise DataError(f"{origin}: the regression label {value!r} is not a number.")
            labels.append(float(value))
        return labels, None, True
    strings = [str(v).strip() for v in raw_labels]
    if label_names is None:
        distinct = set(strings)
        numeric = all(s.lstrip("+-").isdigit() for s in distinct)
        label_names = sorted(distinct, key=int if numeric else None)
    label_names = [str(name) for name in label_names]
    index = {name: i for i, name in enumerate(label_names)}
    labels = []
    for value, origin in zip(strings, origins):
        if value not in index:
            raise DataError(f"{origin}: unknown label {value!r}; expected one of "
                            f"{label_names}.")
        labels.append(index[value])
    return labels, label_names, False


# === Rows of tensorflow-datasets builders (each task folder has its table of them) ===


class TfdsTask(typing.NamedTuple):
    """How a TFDS builder's features map onto kbert's records."""

    kind: str  # "classification", "regression", "question_answering" or "tagging"
    text_a: str  # the text feature (QA: the question; tagging: the words)
    text_b: typing.Optional[str]  # the second text of a pair (QA: the context), or None
    label: str  # the label feature (QA: the answers; tagging: the tags)


def text(value):
    """A TFDS string feature (bytes) as str."""
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def builder_rows(name, task, split, data_dir=None, download=True):
    """(rows, features, where): the rows (numpy) of the TFDS builder `name` at `split`, its
    features, and "name (split)" for messages; `DataError` where the builder lacks a feature
    that `task` (a `TfdsTask`) reads."""
    tfds = _extras.require("tensorflow_datasets", "datasets", f"The TFDS dataset {name}")
    builder = tfds.builder(name, data_dir=data_dir)
    features = builder.info.features
    expected = [f for f in (task.text_a, task.text_b, task.label) if f is not None]
    if task.kind == "question_answering":
        expected.append("id")
    missing = [f for f in expected if f not in features]
    if missing:
        raise DataError(f"{name}: the builder has no feature {missing}; its features: "
                        f"{sorted(features)}.")
    if download:
        builder.download_and_prepare()
    rows = builder.as_dataset(split=split).as_numpy_iterator()
    return rows, features, f"{name} ({split})"
