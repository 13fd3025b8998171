"""A task model's preprocessor: the Keras layer that a task model carries
(`model.preprocessor`), as keras-hub's tasks carry theirs, so that `fit`, `evaluate` and
`predict` take the task's raw inputs (texts, text pairs, words, questions) and labels as
names.

Each task folder has its subclass (`kbert.tasks.<task>.preprocessor`); this base holds the
tokenizer (saved with the model: its files go into the `.keras` archive's assets, its
settings into the config, so that `keras.saving.load_model` in safe mode makes it again) and
the inputs' forms that every task reads: Python lists, NumPy arrays, pandas columns and
`tf.data` datasets.

A subclass gives `encode(x, y=None, task=None) -> Encoded`: the inputs as arrays padded to
`sequence_length`, the labels as the model's `fit` takes them, and `per_token` (labels and
outputs per token, cut with the inputs when batches are grouped by length).
"""

import dataclasses
from typing import Optional

import keras
import numpy as np

from kbert.layers import _utils


@dataclasses.dataclass
class Encoded:
    """A task's inputs and labels as arrays.

    Attributes:
        features: `token_ids`, `segment_ids`, `padding_mask`, int32 [rows, S].
        targets: what follows the features in `fit` (labels, then sample weights where the
            task has them), a tuple of arrays or dicts of arrays with `rows` first; `None`
            without labels.
        rows_of: for tasks where an example gives several rows (question answering's
            windows): each row's example; `None` where a row is an example.
        details: what the task's decoding needs (the `Encoded*` record of its data module).
    """

    features: dict
    targets: Optional[tuple] = None
    rows_of: Optional[np.ndarray] = None
    details: object = None


def is_token_ids(x):
    """Whether `x` is already model inputs (a dict with `token_ids`, or a `tf.data` dataset
    of them): those go to the model as they are."""
    if isinstance(x, dict):
        return "token_ids" in x
    spec = getattr(x, "element_spec", None)
    if spec is None:
        return False
    first = spec[0] if isinstance(spec, tuple) else spec
    return isinstance(first, dict) and "token_ids" in first


def _python(value):
    """A NumPy / TensorFlow scalar or bytes -> a Python value (bytes as UTF-8 text)."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        return [_python(v) for v in value.tolist()] if value.ndim else _python(value.item())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, (list, tuple)):
        return [_python(v) for v in value]
    if isinstance(value, dict):
        return {k: _python(v) for k, v in value.items()}
    return value


def from_dataset(dataset, example_rank=0):
    """A `tf.data` dataset of `x` or `(x, y)`, batched or not, -> (x, y or None) as Python
    lists (dicts of lists for dict elements): a task's data fits in memory, and grouping by
    length needs it whole. `example_rank`: the rank of one example's `x` (0 for a text, 1
    for a sentence's words), which tells a batch from an example."""
    xs, ys, labelled, batched = [], [], None, None
    for element in dataset:
        has_y = isinstance(element, tuple) and len(element) >= 2
        x, y = (element[0], element[1]) if has_y else (element, None)
        if labelled is None:
            first = next(iter(x.values())) if isinstance(x, dict) else x
            labelled, batched = has_y, len(first.shape) > example_rank
        xs.append(_python(x))
        ys.append(_python(y))
    if labelled is None:
        raise ValueError("The dataset is empty: there is nothing to fit or predict.")

    def joined(parts):
        if isinstance(parts[0], dict):
            return {k: [v for p in parts for v in (p[k] if batched else [p[k]])]
                    for k in parts[0]}
        return [v for p in parts for v in p] if batched else list(parts)

    return joined(xs), (joined(ys) if labelled else None)


def as_list(value, what):
    """A column of examples (a list, tuple, NumPy array, pandas Series) -> a Python list; a
    single string is one example."""
    if isinstance(value, (str, bytes)):
        return [_python(value)]
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple)):  # NumPy, pandas
        value = value.tolist()
    if hasattr(value, "numpy"):  # a tf.Tensor
        value = _python(value)
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{what}: expected a list, a NumPy array, a pandas column or a "
                        f"tf.data dataset, got {type(value).__name__}.")
    return [_python(v) for v in value]


def check_texts(texts, what):
    for i, text in enumerate(texts):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{what} {i}: expected a non-empty string, got {text!r}.")
    return texts


def label_ids(labels, label_names, count, what="label"):
    """Labels given as names (of `label_names`) or as ids in [0, count) -> int32 [N]."""
    out = []
    for i, label in enumerate(labels):
        if isinstance(label, str):
            if not label_names or label not in label_names:
                allowed = (f"one of {label_names}" if label_names
                           else f"an id in [0, {count}) (the model has no label names)")
                raise ValueError(f"{what} {i}: unknown label {label!r}; expected {allowed}.")
            out.append(label_names.index(label))
        elif isinstance(label, (int, np.integer)) and not isinstance(label, bool) \
                and 0 <= label < count:
            out.append(int(label))
        else:
            raise ValueError(f"{what} {i}: {label!r} is not a label: expected a name of "
                             f"{label_names} or an id in [0, {count}).")
    return np.asarray(out, np.int32)


@keras.saving.register_keras_serializable(package="kbert")
class Preprocessor(keras.layers.Layer):
    """What every task's preprocessor shares: a kbert tokenizer and the length inputs are
    packed to (`sequence_length`; batches are then cut to their longest example).

    Args:
        tokenizer: a kbert tokenizer (`kbert.load(...).tokenizer`).
        sequence_length: the longest input in tokens, special tokens included; longer texts
            are truncated (pairs longest first). `None`: `default_sequence_length`.
    """

    # Labels and outputs per token (cut with the inputs when batches are grouped by length).
    per_token = False
    # The rank of one example's raw input: 0 for a text, 1 for a sentence's words.
    example_rank = 0
    # `sequence_length` where none is given (keras-hub's and BERT's usual length; `kbert.load`
    # cuts it to the model's positions).
    default_sequence_length = 512

    def __init__(self, tokenizer=None, sequence_length=None, **kwargs):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        self.tokenizer = tokenizer
        if sequence_length is None:
            sequence_length = self.default_sequence_length
        self.sequence_length = _utils.check_positive_int("sequence_length", sequence_length)
        self._saved_tokenizer = None

    def encode(self, x, y=None, task=None):
        """`x` (and labels `y`) -> `Encoded`; `task` is the task model (its label names)."""
        raise NotImplementedError

    def __call__(self, x, *args, **kwargs):
        # Keras takes tensors only as positional arguments: Python lists of strings first
        # become string tensors.
        import tensorflow as tf

        convert = lambda v: v if tf.is_tensor(v) else tf.constant(  # noqa: E731
            [v] if isinstance(v, (str, bytes)) else as_list(v, "x"), tf.string)
        x = {k: convert(v) for k, v in x.items()} if isinstance(x, dict) else convert(x)
        return super().__call__(x, *args, **kwargs)

    def _check_tokenizer(self):
        if self.tokenizer is None:
            raise ValueError(f"{type(self).__name__} has no tokenizer: give one "
                             "(kbert.load(...).tokenizer), or pass token ids.")
        return self.tokenizer

    # === Saving: the tokenizer's settings in the config, its files in the assets ===

    def get_config(self):
        from kbert.tokenizers import saving

        config = super().get_config()
        config["sequence_length"] = self.sequence_length
        config["tokenizer"] = (saving.settings(self.tokenizer) if self.tokenizer is not None
                               else None)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        settings = config.pop("tokenizer", None)
        layer = cls(**config)
        layer._saved_tokenizer = settings  # made again by load_assets, from its files
        return layer

    def save_assets(self, dir_path):
        if self.tokenizer is not None:
            from kbert.tokenizers import saving

            saving.write(self.tokenizer, dir_path)

    def load_assets(self, dir_path):
        if self._saved_tokenizer is not None:
            from kbert.tokenizers import saving

            self.tokenizer = saving.read(self._saved_tokenizer, dir_path)
