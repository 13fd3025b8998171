"""The text classifier's preprocessor: texts or text pairs -> token ids, labels as names."""

import keras
import numpy as np

from kbert.tasks import preprocessor as base
from kbert.tasks.text_classification.features import (
    as_classification_data,
    encode_classification,
    pack_texts,
)

PREPROCESSOR = "TextClassifierPreprocessor"
# transformers' keys of a pair (its pipeline's `{"text": ..., "text_pair": ...}`).
TEXT, TEXT_PAIR = "text", "text_pair"


def texts_of(x):
    """The forms a classifier's `x` takes -> (first texts, second texts or None): a list of
    texts, a list of (text, text_pair) pairs, or {"text": [...], "text_pair": [...]}."""
    if isinstance(x, dict):
        unknown = set(x) - {TEXT, TEXT_PAIR}
        if TEXT not in x or unknown:
            raise ValueError(f"Pairs are given as {{{TEXT!r}: [...], {TEXT_PAIR!r}: [...]}}; "
                             f"got the keys {sorted(x)}.")
        first = base.as_list(x[TEXT], TEXT)
        second = base.as_list(x[TEXT_PAIR], TEXT_PAIR) if TEXT_PAIR in x else None
        if second is not None and len(second) != len(first):
            raise ValueError(f"{len(first)} texts but {len(second)} text pairs: give one "
                             "second text per text.")
    else:
        items = base.as_list(x, "x")
        if items and all(isinstance(item, (list, tuple)) and len(item) == 2 for item in items):
            first, second = [a for a, _ in items], [b for _, b in items]
        else:
            first, second = items, None
    return first, second  # empty texts: `encode_classification` names them


def _multi_hot(y, task):
    """Multi-label targets given as one NumPy array [texts, classes]: a row of 0s and 1s per
    text (lists are read as names or ids per text)."""
    return (task is not None and task.problem_type == "multi_label"
            and isinstance(y, np.ndarray) and y.ndim == 2)


@keras.saving.register_keras_serializable(package="kbert")
class TextClassifierPreprocessor(base.Preprocessor):
    """Texts (or pairs) -> `token_ids`, `segment_ids`, `padding_mask`, packed as the
    tokenizer packs them (`[CLS] A [SEP] B [SEP]`; RoBERTa's `<s> A </s></s> B </s>`), pairs
    truncated longest first; labels as names of the model's `label_names` or as ids (floats
    for regression; for multi-label, a list of names or ids per text, or a multi-hot NumPy
    array [texts, classes]).

    As a layer (`preprocessor(texts)`, or `dataset.map(preprocessor)`), strings [B], pairs
    [B, 2] or {"text", "text_pair"} -> the inputs padded to `sequence_length`, in the graph.
    """

    def encode(self, x, y=None, task=None):
        tokenizer = self._check_tokenizer()
        first, second = texts_of(x)
        data = as_classification_data(first if second is None else list(zip(first, second)))
        features = encode_classification(data, tokenizer, self.sequence_length).features
        if y is None:
            targets = None
        elif _multi_hot(y, task):
            targets = (np.asarray(y, np.float32),)
            if targets[0].shape != (len(first), task.num_classes) or not np.isin(
                    targets[0], (0, 1)).all():
                raise ValueError(f"Multi-hot labels are 0 or 1, [texts, classes] = "
                                 f"[{len(first)}, {task.num_classes}]; got an array of shape "
                                 f"{targets[0].shape} with values {np.unique(targets[0])[:5]}.")
        else:
            targets = (self._labels(base.as_list(y, "y"), len(first), task),)
        return base.Encoded(features, targets)

    @staticmethod
    def _labels(labels, count, task):
        if len(labels) != count:
            raise ValueError(f"{count} texts but {len(labels)} labels: give one label per "
                             "text.")
        if task is None:
            return np.asarray(labels)
        names, classes = task.label_names, task.num_classes
        if task.problem_type == "regression":
            try:
                return np.asarray(labels, np.float32)
            except (TypeError, ValueError):
                raise ValueError(f"A regression's labels are numbers; got {labels[:3]!r}...")\
                    from None
        if task.problem_type == "multi_label":
            rows = np.zeros((count, classes), np.float32)
            for i, label in enumerate(labels):
                if not isinstance(label, (list, tuple)):
                    raise ValueError(f"label {i}: a multi-label classifier takes a list of "
                                     f"label names or ids per text (or a multi-hot NumPy "
                                     f"array [texts, {classes}]); got {label!r}.")
                rows[i, base.label_ids(label, names, classes, f"label of text {i}")] = 1
            return rows
        return base.label_ids(labels, names, classes)

    def call(self, x):
        import tensorflow as tf

        tokenizer = self._check_tokenizer()
        if isinstance(x, dict):
            texts = [x[TEXT]] + ([x[TEXT_PAIR]] if TEXT_PAIR in x else [])
        elif x.shape.rank == 2 and x.shape[-1] == 2:  # (text, text_pair) rows
            texts = [x[:, 0], x[:, 1]]
        else:
            texts = [x]
        texts = [tf.reshape(tf.convert_to_tensor(t, tf.string), [-1]) for t in texts]
        return pack_texts(tokenizer, texts, self.sequence_length)
