"""Input pipelines (tf.data, on the host): pretraining, and the fine-tuning tasks' data in
(readers, TFDS, features) and predictions out (answers, entities with character offsets)."""

from kbert.data import (
    classification, corpora, inputs, question_answering, task_features, task_files,
    task_records, task_tfds, text_spans, tfrecords,
)
from kbert.data.classification import classification_dataset, encode_classification
from kbert.data.masking import Masker
from kbert.data.pairs import PairBuilder
from kbert.data.pretraining_examples import examples, pretraining_dataset
from kbert.data.question_answering import (
    decode_answers, encode_questions, question_answering_dataset,
)
from kbert.data.task_features import DataError
from kbert.data.task_files import read_classification_file, read_squad
from kbert.data.task_tfds import tfds_task
from kbert.data.text_spans import split_words

__all__ = [
    "DataError", "Masker", "PairBuilder", "classification", "classification_dataset",
    "corpora", "decode_answers", "encode_classification",
    "encode_questions",
    "examples", "inputs", "pretraining_dataset", "question_answering",
    "question_answering_dataset", "read_classification_file", "read_squad",
    "split_words", "task_features", "task_files", "task_records",
    "task_tfds", "text_spans", "tfds_task", "tfrecords",
]
