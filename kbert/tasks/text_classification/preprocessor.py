"""The text classifier's preprocessor: texts or text pairs -> token ids, labels as names."""

import keras
import numpy as np

from kbert.tasks import preprocessor as base
from kbert.tasks.text_classification.features import as_classification_data, encode_classification

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
    base.check_texts(first, "text")
    if second is not None:
        base.check_texts(second, "text pair")
    return first, second


@keras.saving.register_keras_serializable(package="kbert")
class TextClassifierPreprocessor(base.Preprocessor):
    """Texts (or pairs) -> `token_ids`, `segment_ids`, `padding_mask`, packed as the
    tokenizer packs them (`[CLS] A [SEP] B [SEP]`; RoBERTa's `<s> A </s></s> B </s>`), pairs
    truncated longest first; labels as names of the model's `label_names` or as ids (floats
    for regression, multi-hot rows or lists of names for multi-label).

    As a layer (`preprocessor(texts)`, or `dataset.map(preprocessor)`), strings [B] (or
    {"text", "text_pair"}) -> the inputs padded to `sequence_length`, in the graph.
    """

    def encode(self, x, y=None, task=None):
        tokenizer = self._check_tokenizer()
        first, second = texts_of(x)
        data = as_classification_data(first if second is None else list(zip(first, second)))
        features = encode_classification(data, tokenizer, self.sequence_length).features
        targets = None if y is None else (self._labels(base.as_list(y, "y"), len(first),
                                                       task),)
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
                if isinstance(label, (list, tuple)) and len(label) == classes and all(
                        isinstance(v, (int, float)) and not isinstance(v, bool) for v in label):
                    rows[i] = label  # a multi-hot row
                elif isinstance(label, (list, tuple)):
                    rows[i, base.label_ids(label, names, classes, f"label of text {i}")] = 1
                else:
                    raise ValueError(f"label {i}: a multi-label classifier takes a list of "
                                     f"label names or ids, or a multi-hot row; got {label!r}.")
            return rows
        return base.label_ids(labels, names, classes)

    def call(self, x):
        import tensorflow as tf

        tokenizer = self._check_tokenizer()
        texts = [x[TEXT], x[TEXT_PAIR]] if isinstance(x, dict) and TEXT_PAIR in x else [
            x[TEXT] if isinstance(x, dict) else x]
        texts = [tf.reshape(tf.convert_to_tensor(t, tf.string), [-1]) for t in texts]
        rows = tf.shape(texts[0], out_type=tf.int64)[0]
        ids = tokenizer.tokenize(tf.concat(texts, 0))  # one tokenizer call for both texts
        segments = [ids[i * rows:(i + 1) * rows] for i in range(len(texts))]
        return tokenizer.pack(segments, self.sequence_length)
