"""Wordpieces packed into model inputs inside a TFLite graph: cut and padded with
`RaggedTensorToTensor` and plain arithmetic on dense tensors, never by slicing a ragged
tensor (which adds `RaggedRange`, an op TFLite has no kernel for); the pair layout is the
tokenizer's (`kbert.tokenizers.packing`), as the SavedModels pack. And wordpieces with their
UTF-8 byte offsets in the text as given (`text.encode("utf-8")[start:end]`), from
tensorflow-text's `FastBertNormalize` and `FastWordpieceTokenizeWithOffsets` (TFLite
kernels), placed at the pieces' positions; the host turns them into characters
(`kbert.tokenizers.alignment.char_offset`). The text must be valid UTF-8 (TFLite has no
kernel to repair it)."""

import tensorflow as tf

from kbert import _keras_private
from kbert.tasks.graph.packing import lengths, longest_first
from kbert.tokenizers.packing import layout_of, special_count


def dense(ragged, width, default):
    """A ragged [B, (n)] -> [B, width] (cut and padded), by `RaggedTensorToTensor`."""
    return ragged.to_tensor(default_value=default, shape=[None, width])


def pack_text(tokenizer, ids, sequence_length):
    """Ragged wordpiece ids [B, (pieces)] -> [CLS] ids [SEP] cut to `sequence_length` and
    padded: `token_ids`, `segment_ids`, `padding_mask` int32 [B, sequence_length]."""
    budget = sequence_length - 2
    count = tf.minimum(lengths(ids), budget)[:, None]  # [B, 1]
    return pack_dense(tokenizer, dense(ids, budget, tokenizer.pad_id), count, sequence_length)


def pack_pairs(tokenizer, first, second, sequence_length):
    """Ragged ids of A and B [B, (pieces)] -> [CLS] A [SEP] B [SEP] cut by transformers'
    "longest_first" (`packing.longest_first`, the pipeline's rule) and padded."""
    budget = sequence_length - special_count(tokenizer, True)
    a, b = longest_first(lengths(first)[:, None], lengths(second)[:, None], budget)  # [B, 1]
    return pack_dense(tokenizer, dense(first, budget, tokenizer.pad_id), a, sequence_length,
                      dense(second, budget, tokenizer.pad_id), b)


def pack_premises(tokenizer, premises, hypotheses, sequence_length):
    """Ragged ids of premises [B, (pieces)] and fixed hypotheses (lists of ids, N of them,
    each shorter than `sequence_length` less a pair's special tokens) -> the B x N pairs
    [CLS] premise [SEP] hypothesis [SEP], premise i with hypothesis j in row i * N + j, the
    premise cut to fit ("only_first", as the zero-shot pipeline): `token_ids`,
    `segment_ids`, `padding_mask` int32 [B * N, S]."""
    budget = sequence_length - special_count(tokenizer, True)
    count = len(hypotheses)
    dense_h = tf.constant([list(h) + [tokenizer.pad_id] * (budget - len(h))
                           for h in hypotheses], tf.int32)  # [N, budget]
    b = tf.constant([[len(h)] for h in hypotheses], tf.int32)  # [N, 1]
    dense_p = dense(premises, budget, tokenizer.pad_id)
    a = lengths(premises)[:, None]  # [B, 1]
    rows = tf.shape(dense_p)[0]
    dense_a = tf.reshape(tf.tile(dense_p[:, None, :], [1, count, 1]), [-1, budget])
    a = tf.reshape(tf.tile(a[:, None, :], [1, count, 1]), [-1, 1])
    dense_b = tf.reshape(tf.tile(dense_h[None], [rows, 1, 1]), [-1, budget])
    b = tf.reshape(tf.tile(b[None], [rows, 1, 1]), [-1, 1])
    a = tf.minimum(a, budget - b)
    return pack_dense(tokenizer, dense_a, a, sequence_length, dense_b, b)


def pack_dense(tokenizer, first, a, sequence_length, second=None, b=None):
    """Dense pieces of A (and of B) [B, width] of which the first `a` (`b`) [B, 1] are kept
    (fitting with the special tokens) -> [CLS] A [SEP] (B [SEP]) by the tokenizer's layout,
    padded: `token_ids`, `segment_ids`, `padding_mask` int32 [B, `sequence_length`]."""
    position = tf.range(sequence_length)[None, :]
    pad = tf.fill([tf.shape(first)[0], sequence_length], tokenizer.pad_id)
    # Piece i of A at position i + 1, then [SEP]s (up to B's first position, `start`).
    token_ids = tf.concat([pad[:, :1], first, pad], axis=1)[:, :sequence_length]
    token_ids = tf.where(position <= a, token_ids, tokenizer.sep_id)
    segment_ids, end = tf.zeros_like(token_ids), a + 1  # end: the last [SEP]
    if second is not None:
        layout = layout_of(tokenizer)
        start = a + 1 + layout.separators
        end = start + b
        in_b = tf.clip_by_value(position - start, 0, tf.shape(second)[1] - 1)  # [B, S]
        token_ids = tf.where((position >= start) & (position < end),
                             tf.gather(second, in_b, batch_dims=1), token_ids)
        # tf.where, not a cast of the condition: the converter folds Embedding's
        # negative-index check on a cast bool into a zeros_like of bools, which TFLite has
        # no kernel for.
        segment_ids = tf.where((position >= start) & (position <= end), layout.second_segment,
                               0)
    token_ids = tf.where(position == 0, tokenizer.cls_id,
                         tf.where(position <= end, token_ids, tokenizer.pad_id))
    return {"token_ids": token_ids, "segment_ids": segment_ids,
            "padding_mask": tf.cast(position <= end, tf.int32)}


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
