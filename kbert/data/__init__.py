"""The pretraining input pipeline (tf.data, on the host)."""

from kbert.data import corpora, inputs, tfrecords
from kbert.data.masking import Masker
from kbert.data.pairs import PairBuilder
from kbert.data.pipeline import examples, pretraining_dataset

__all__ = [
    "Masker",
    "PairBuilder",
    "corpora",
    "examples",
    "inputs",
    "pretraining_dataset",
    "tfrecords",
]
