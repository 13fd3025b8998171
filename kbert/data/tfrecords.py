"""TFRecords in the original BERT format, read and written.

Files made by google-research/bert's create_pretraining_data.py train with kbert as they are;
`write` makes files that tool's readers accept. Feature names on disk -> kbert names:
input_ids -> token_ids, input_mask -> padding_mask, segment_ids -> segment_ids,
masked_lm_positions -> mask_positions, masked_lm_ids -> mask_ids,
masked_lm_weights -> mask_weights, next_sentence_labels -> next_sentence_labels.
"""

import os
import time

import numpy as np
import tensorflow as tf
from absl import logging

from kbert.data import corpora
from kbert.data.pretraining_examples import split_features_and_labels

ORIGINAL_NAMES = {
    "input_ids": "token_ids",
    "input_mask": "padding_mask",
    "segment_ids": "segment_ids",
    "masked_lm_positions": "mask_positions",
    "masked_lm_ids": "mask_ids",
    "masked_lm_weights": "mask_weights",
    "next_sentence_labels": "next_sentence_labels",
}
KBERT_NAMES = {v: k for k, v in ORIGINAL_NAMES.items()}


def _int_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))


def _float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in values]))


def serialize(example):
    """One example (kbert names -> numpy arrays) as a serialized `tf.train.Example` with the
    original feature names; a feature the original format has not (`document_ids`, with
    `fill_rows` and `document_ids=True`) keeps its kbert name, which BERT's readers ignore."""
    feature = {}
    for name, value in example.items():
        values = np.asarray(value).reshape(-1)
        feature[KBERT_NAMES.get(name, name)] = (
            _float_feature(values) if name == "mask_weights" else _int_feature(values))
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    return example.SerializeToString(deterministic=True)  # keys sorted: the same bytes anywhere


def shard_files(path, num_shards):
    """The files `write` writes: `path`, or with num_shards > 1 `path`-NNNNN-of-NNNNN."""
    if not isinstance(num_shards, int) or num_shards < 1:
        raise ValueError(f"num_shards must be an integer >= 1, got {num_shards!r}.")
    if num_shards == 1:
        return [path]
    return [f"{path}-{i:05d}-of-{num_shards:05d}" for i in range(num_shards)]


def write(dataset, path, num_shards=1, log_every=10000):
    """Writes a (features, labels) dataset (batched or not) to `path`[-NNNNN-of-NNNNN].

    Logs progress every `log_every` examples. Returns the files written and the number of
    examples.
    """

    def records():
        for features, labels in dataset.as_numpy_iterator():
            merged = {**features, **labels}
            batched = merged["token_ids"].ndim == 2
            rows = len(merged["token_ids"]) if batched else 1
            for r in range(rows):
                yield serialize({k: (v[r] if batched else v) for k, v in merged.items()})

    return write_records(records(), path, num_shards, log_every)


def write_records(records, path, num_shards=1, log_every=10000):
    """Writes serialized examples round-robin to `shard_files(path, num_shards)`, logging
    progress every `log_every`. Returns the files written and the number of examples."""
    files = shard_files(path, num_shards)
    folder = os.path.dirname(path)
    if folder:
        tf.io.gfile.makedirs(folder)
    writers = [tf.io.TFRecordWriter(f) for f in files]
    count = 0
    start = time.time()
    try:
        for record in records:
            writers[count % num_shards].write(record)
            count += 1
            if log_every and count % log_every == 0:
                logging.info("%d examples written (%.0f/s)", count, count / (time.time() - start))
    finally:
        for w in writers:
            w.close()
    return files, count


def read(patterns, sequence_length, max_predictions, batch_size, next_sentence_labels=True,
         shuffle_files=True, seed=0, drop_remainder=True, cycle_length=4, repeat=False):
    """Batches of (features, labels) in kbert's names from original-format TFRecords.

    A pattern that matches no file is an error naming it, raised at once. `repeat=True`
    gives an endless stream, the file order shuffled afresh on every pass, that every new
    iterator yields identically from its start (see `pretraining_dataset`).
    """
    files = corpora.expand_patterns(patterns)
    spec = {
        "input_ids": tf.io.FixedLenFeature([sequence_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([sequence_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([sequence_length], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([max_predictions], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([max_predictions], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions], tf.float32),
    }
    if next_sentence_labels:
        spec["next_sentence_labels"] = tf.io.FixedLenFeature([1], tf.int64)

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        out = {}
        for name, value in parsed.items():
            value = value if value.dtype == tf.float32 else tf.cast(value, tf.int32)
            if name == "next_sentence_labels":
                value = tf.reshape(value, [-1])
            out[ORIGINAL_NAMES[name]] = value
        return split_features_and_labels(out)

    data = tf.data.Dataset.from_tensor_slices(files)
    if repeat:
        data = data.repeat()
    if shuffle_files:
        data = data.shuffle(len(files), seed=seed, reshuffle_each_iteration=not repeat)
    data = data.interleave(tf.data.TFRecordDataset, cycle_length=cycle_length,
                           num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    data = data.batch(batch_size, drop_remainder=drop_remainder)
    return data.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
