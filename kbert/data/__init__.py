"""Input pipelines (tf.data, on the host): pretraining, and the fine-tuning tasks' data in
(readers, TFDS, features) and predictions out (entities with character offsets); question
answering's are the task's (`kbert.tasks.question_answering`)."""

from kbert.data import (
    classification, corpora, inputs, tagging, task_features, task_files,
    task_records, task_tfds, text_spans, tfrecords,
)
from kbert.data.classification import classification_dataset, encode_classification
from kbert.data.masking import Masker
from kbert.data.pairs import PairBuilder
from kbert.data.pretraining_examples import examples, pretraining_dataset
from kbert.data.tagging import decode_entities, encode_tagging, tagging_dataset
from kbert.data.task_features import DataError
from kbert.data.task_files import read_classification_file, read_conll
from kbert.data.task_tfds import tfds_task
from kbert.data.text_spans import split_words

__all__ = [
    "DataError", "Masker", "PairBuilder", "classification", "classification_dataset",
    "corpora", "decode_entities", "encode_classification",
    "encode_tagging",
    "examples", "inputs", "pretraining_dataset",
    "read_classification_file", "read_conll",
    "split_words", "tagging", "tagging_dataset", "task_features", "task_files", "task_records",
    "task_tfds", "text_spans", "tfds_task", "tfrecords",
]
