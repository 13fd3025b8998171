"""Wordpieces packed into model inputs inside a TFLite graph: cut and padded with
`RaggedTensorToTensor` and plain arithmetic on dense tensors, never by slicing a ragged
tensor (which adds `RaggedRange`, an op TFLite has no kernel for); and wordpieces with their
UTF-8 byte offsets (`pieces_with_offsets`), placed at their positions (`placed`)."""

import tensorflow as tf

from kbert.tasks.graph.packing import longest_first


def pack_text(tokenizer, ids, sequence_length):
    """Ragged wordpiece ids [B, (pieces)] -> [CLS] ids [SEP] cut to `sequence_length` and
    padded: `token_ids`, `segment_ids`, `padding_mask` int32 [B, sequence_length]."""
    budget = sequence_length - 2
    count = tf.minimum(tf.cast(ids.row_lengths(), tf.int32), budget)[:, None]  # [B, 1]
    pieces = ids.to_tensor(default_value=tokenizer.pad_id, shape=[None, budget])
    return pack_dense(tokenizer, pieces, count, sequence_length)


def pack_dense(tokenizer, pieces, count, sequence_length):
    """Dense pieces [B, W >= sequence_length - 2] of which the first `count` [B, 1] are real
    (count <= sequence_length - 2) -> [CLS] pieces [SEP] padded, as `pack_text`."""
    pieces = pieces[:, :sequence_length - 2]
    edge = tf.fill([tf.shape(pieces)[0], 1], tokenizer.pad_id)
    shifted = tf.concat([edge, pieces, edge], axis=1)  # piece i at position i + 1
    position = tf.range(sequence_length)[None, :]
    token_ids = tf.where(position == 0, tokenizer.cls_id,
                         tf.where(position == count + 1, tokenizer.sep_id,
                                  tf.where(position <= count, shifted, tokenizer.pad_id)))
    return {"token_ids": token_ids, "segment_ids": tf.zeros_like(token_ids),
            "padding_mask": tf.cast(position <= count + 1, tf.int32)}


def pack_pairs(tokenizer, first, second, sequence_length):
    """Ragged ids of A and B [B, (pieces)] -> [CLS] A [SEP] B [SEP] cut by transformers'
    "longest_first" (`packing.longest_first`, the pipeline's rule) and padded, by arithmetic
    on dense tensors: `token_ids`, `segment_ids`, `padding_mask` int32 [B, S]."""
    budget = sequence_length - 3
    a, b = longest_first(tf.cast(first.row_lengths(), tf.int32)[:, None],
                         tf.cast(second.row_lengths(), tf.int32)[:, None], budget)  # [B, 1]
    dense_a = first.to_tensor(default_value=tokenizer.pad_id, shape=[None, budget])
    dense_b = second.to_tensor(default_value=tokenizer.pad_id, shape=[None, budget])
    return pack_dense_pairs(tokenizer, dense_a, a, dense_b, b, sequence_length)


def pack_premises(tokenizer, premises, hypotheses, sequence_length):
    """Ragged ids of premises [B, (pieces)] and fixed hypotheses (lists of ids, N of them,
    each shorter than `sequence_length - 3`) -> the B x N pairs [CLS] premise [SEP]
    hypothesis [SEP], premise i with hypothesis j in row i * N + j, the premise cut to
    fit ("only_first", as the zero-shot pipeline): `token_ids`, `segment_ids`,
    `padding_mask` int32 [B * N, S]."""
    budget = sequence_length - 3
    count = len(hypotheses)
    dense_h = tf.constant([list(h) + [tokenizer.pad_id] * (budget - len(h))
                           for h in hypotheses], tf.int32)  # [N, budget]
    b = tf.constant([[len(h)] for h in hypotheses], tf.int32)  # [N, 1]
    dense_p = premises.to_tensor(default_value=tokenizer.pad_id, shape=[None, budget])
    a = tf.cast(premises.row_lengths(), tf.int32)[:, None]  # [B, 1]
    rows = tf.shape(dense_p)[0]
    dense_a = tf.reshape(tf.tile(dense_p[:, None, :], [1, count, 1]), [-1, budget])
    a = tf.reshape(tf.tile(a[:, None, :], [1, count, 1]), [-1, 1])
    dense_b = tf.reshape(tf.tile(dense_h[None], [rows, 1, 1]), [-1, budget])
    b = tf.reshape(tf.tile(b[None], [rows, 1, 1]), [-1, 1])
    a = tf.minimum(a, budget - b)
    return pack_dense_pairs(tokenizer, dense_a, a, dense_b, b, sequence_length)


def pack_dense_pairs(tokenizer, dense_a, a, dense_b, b, sequence_length):
    """Dense pieces of A and B [B, sequence_length - 3] of which the first `a`, `b` [B, 1]
    are kept (a + b <= sequence_length - 3) -> [CLS] A [SEP] B [SEP] padded."""
    budget = sequence_length - 3
    edge = tf.fill([tf.shape(dense_a)[0], 1], tokenizer.pad_id)
    shifted_a = tf.concat([edge, dense_a, edge, edge], axis=1)  # piece i at position i + 1
    position = tf.range(sequence_length)[None, :]
    in_b = tf.clip_by_value(position - a - 2, 0, budget - 1)  # [B, S]
    from_b = tf.gather(dense_b, in_b, batch_dims=1)
    token_ids = tf.where(
        position == 0, tokenizer.cls_id, tf.where(
            position <= a, shifted_a, tf.where(
                (position == a + 1) | (position == a + b + 2), tokenizer.sep_id, tf.where(
                    position <= a + b + 1, from_b, tokenizer.pad_id))))
    # tf.where, not a cast of the condition: the converter folds Embedding's negative-index
    # check on a cast bool into a zeros_like of bools, which TFLite has no kernel for.
    return {"token_ids": token_ids,
            "segment_ids": tf.where((position >= a + 2) & (position <= a + b + 2), 1, 0),
            "padding_mask": tf.cast(position <= a + b + 2, tf.int32)}
