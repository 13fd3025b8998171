"""Input pipelines (tf.data, on the host): pretraining, and the fine-tuning tasks' data in
(readers, TFDS, features) and predictions out (answers, entities with character offsets)."""

from kbert.data import (
    corpora, inputs, question_answering, task_features, task_files,
    task_records, task_tfds, text_spans, tfrecords,
)
from kbert.data.masking import Masker
from kbert.data.pairs import PairBuilder
from kbert.data.pretraining_examples import examples, pretraining_dataset
from kbert.data.question_answering import (
    decode_answers, encode_questions, question_answering_dataset,
)
from kbert.data.task_features import DataError
from kbert.data.task_files import read_squad
from kbert.data.task_tfds import tfds_task
from kbert.data.text_spans import split_words

__all__ = [
    "DataError", "Masker", "PairBuilder",
    "corpora", "decode_answers",
    "encode_questions",
    "examples", "inputs", "pretraining_dataset", "question_answering",
    "question_answering_dataset", "read_squad",
    "split_words", "task_features", "task_files", "task_records",
    "task_tfds", "text_spans", "tfds_task", "tfrecords",
]
