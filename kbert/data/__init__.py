"""The pretraining input pipeline (tf.data, on the host): corpora, sentence pairs (NSP/SOP),
masking, TFRecords in the original format, and `pretraining_dataset` that joins them.

The fine-tuning tasks' data are their folders' (`kbert.tasks.<task>.data`, what they share
in `kbert.tasks.datasets`); packing and word alignment are the tokenizers'
(`kbert.tokenizers.packing`, `kbert.tokenizers.alignment`)."""

from kbert.data import corpora, inputs, tfrecords
from kbert.data.masking import Masker
from kbert.data.pairs import PairBuilder
from kbert.data.pretraining_examples import examples, pretraining_dataset

__all__ = ["Masker", "PairBuilder", "corpora", "examples", "inputs", "pretraining_dataset",
           "tfrecords"]
