"""Input pipelines (tf.data, on the host): pretraining (corpora, sentence pairs, masking,
TFRecords), and what the fine-tuning task folders' data share (`task_features`: feature
names, packing, batching; `task_records`: labels; `task_tfds`: TFDS builders' rows;
`text_spans`: words and pieces of the original text). Each task's readers and features are
its folder's (`kbert.tasks.<task>.data`)."""

from kbert.data import (
    corpora, inputs, task_features, task_records, task_tfds, text_spans, tfrecords,
)
from kbert.data.masking import Masker
from kbert.data.pairs import PairBuilder
from kbert.data.pretraining_examples import examples, pretraining_dataset
from kbert.data.task_features import DataError
from kbert.data.text_spans import split_words

__all__ = [
    "DataError", "Masker", "PairBuilder", "corpora", "examples", "inputs",
    "pretraining_dataset", "split_words", "task_features", "task_records", "task_tfds",
    "text_spans", "tfrecords",
]
