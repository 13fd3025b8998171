"""Wordpieces with their UTF-8 byte offsets inside a TFLite graph (tensorflow-text's
`FastBertNormalize` and `FastWordpieceTokenizeWithOffsets`, with TFLite kernels), and those
offsets placed at the pieces' positions in the model's input. Offsets are bytes of the text
as given (`text.encode("utf-8")[start:end]`); the host turns them into characters
(`kbert.tokenizers.alignment.char_offset`). The text must be valid UTF-8 (TFLite has no kernel to
repair it)."""

import tensorflow as tf

from kbert import _keras_private


def dense(ragged, width, default):
    """A ragged [B, (n)] -> [B, width] (cut and padded), by `RaggedTensorToTensor`."""
    return ragged.to_tensor(default_value=default, shape=[None, width])


def pieces_with_offsets(fast, text):
    """`FastBertTokenizer.tokenize_with_offsets` without ragged gathers (TFLite has no
    kernel for the `RaggedRange` they add): ragged ids [B, (pieces)], and each piece's
    UTF-8 byte start and end in `text`, dense [B, >= pieces]."""
    normalizer, wordpiece = _keras_private.fast_bert_parts(fast)
    normalized, offsets = normalizer.normalize_with_offsets(text)
    ids, starts, ends = wordpiece.tokenize_with_offsets(normalized)
    # Normalized byte -> input byte (`offsets` has one more entry per text: its end).
    table = offsets.to_tensor(default_value=0)
    to_bytes = lambda post: tf.gather(  # noqa: E731
        table, dense(tf.cast(post, tf.int32), None, 0), batch_dims=1)
    return ids, to_bytes(starts), to_bytes(ends)


def placed(values, first, count, sequence_length):
    """Per-piece values [B, >= count] -> [B, sequence_length] with piece i at position
    `first + i` for i < count, -1 elsewhere."""
    position = tf.range(sequence_length)[None, :]
    index = tf.clip_by_value(position - first + tf.zeros_like(count), 0,
                             tf.shape(values)[1] - 1)  # [B, S]
    moved = tf.gather(values, index, batch_dims=1)
    return tf.where((position >= first) & (position < first + count), moved, -1)
