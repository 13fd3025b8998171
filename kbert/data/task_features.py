"""What the fine-tuning pipelines share: the feature and label names, packing, batching.

Every task dataset yields `(features, labels)` for `model.fit`, dicts of static-shape tensors:

- features (all tasks): `token_ids`, `segment_ids`, `padding_mask`, int32 [B, S];
- classification: `labels` int32 [B] (float32 [B] for regression);
- tagging: `labels` int32 [B, S] and `label_weights` float32 [B, S] (1 on the first
  wordpiece of each word, 0 on the other pieces, the specials and the padding);
- question answering: `start_positions`, `end_positions` int32 [B] (0 = [CLS]: no answer,
  or the answer is not whole in this window).
"""

import numpy as np
import tensorflow as tf

TOKEN_IDS = "token_ids"
SEGMENT_IDS = "segment_ids"
PADDING_MASK = "padding_mask"
LABELS = "labels"
LABEL_WEIGHTS = "label_weights"
START_POSITIONS = "start_positions"
END_POSITIONS = "end_positions"

FEATURE_KEYS = (TOKEN_IDS, SEGMENT_IDS, PADDING_MASK)
CLASSIFICATION_LABEL_KEYS = (LABELS,)
TAGGING_LABEL_KEYS = (LABELS, LABEL_WEIGHTS)
QUESTION_ANSWERING_LABEL_KEYS = (START_POSITIONS, END_POSITIONS)

AUTOTUNE = tf.data.AUTOTUNE


class DataError(ValueError):
    """Bad task data; the message names the file (or TFDS dataset) and the row."""


def check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def pack_segments(segments, sequence_length, cls_id, sep_id, pad_id):
    """[CLS] A [SEP] (B [SEP]) from ragged ids [batch, (pieces)], in the graph.

    Pairs are truncated as BERT's `_truncate_seq_pair` does (longest first: the longer
    segment loses its last token until the pair fits, B on ties): the round-robin trimmer
    keeps the same lengths. Returns int32 [batch, sequence_length] `token_ids`,
    `segment_ids`, `padding_mask`.
    """
    import tensorflow_text as tf_text  # only where a tokenizer (tensorflow-text) is in use

    budget = sequence_length - 1 - len(segments)  # [CLS] and one [SEP] per segment
    trimmed = tf_text.RoundRobinTrimmer(max_seq_length=budget).trim(list(segments))
    ids, segment_ids = tf_text.combine_segments(
        trimmed, start_of_sequence_id=cls_id, end_of_segment_id=sep_id)
    token_ids, padding_mask = tf_text.pad_model_inputs(ids, sequence_length, pad_value=pad_id)
    segment_ids, _ = tf_text.pad_model_inputs(segment_ids, sequence_length)
    return {TOKEN_IDS: tf.cast(token_ids, tf.int32),
            SEGMENT_IDS: tf.cast(segment_ids, tf.int32),
            PADDING_MASK: tf.cast(padding_mask, tf.int32)}


def packed_row(first, second, sequence_length, cls_id, sep_id, pad_id):
    """One row in numpy: [CLS] first [SEP] (second [SEP]), padded; the caller made it fit.

    Returns (token_ids, segment_ids, padding_mask), int32 [sequence_length] each, and the
    position of `second`'s first token (or of the padding when there is no `second`).
    """
    token_ids = np.full(sequence_length, pad_id, np.int32)
    segment_ids = np.zeros(sequence_length, np.int32)
    padding_mask = np.zeros(sequence_length, np.int32)
    end = len(first) + 2
    token_ids[0] = cls_id
    token_ids[1 : end - 1] = first
    token_ids[end - 1] = sep_id
    offset = end
    if second is not None:
        token_ids[end : end + len(second)] = second
        end += len(second)
        token_ids[end] = sep_id
        end += 1
        segment_ids[offset:end] = 1
    padding_mask[:end] = 1
    return token_ids, segment_ids, padding_mask, offset


def batched(data, batch_size, training, shuffle_buffer, seed, drop_remainder, repeat):
    """Shuffles (when training), batches and prefetches a dataset of examples.

    `drop_remainder=None` drops the last partial batch when training (static batch size,
    TPU) and keeps it otherwise (every example predicted).
    """
    check_int("batch_size", batch_size, 1)
    if drop_remainder is None:
        drop_remainder = bool(training)
    if repeat:
        data = data.repeat()
    if training and shuffle_buffer:
        data = data.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=not repeat)
    return data.batch(batch_size, drop_remainder=drop_remainder)


def arrays_dataset(features, labels, batch_size=32, training=False, shuffle_buffer=10_000,
                   seed=0, drop_remainder=None, repeat=False):
    """Batches of `(features, labels)` (or `features` alone when `labels` is None) from dicts
    of numpy arrays that share their first dimension."""
    elements = features if labels is None else (features, labels)
    data = tf.data.Dataset.from_tensor_slices(elements)
    data = batched(data, batch_size, training, shuffle_buffer, seed, drop_remainder, repeat)
    return data.prefetch(AUTOTUNE)
