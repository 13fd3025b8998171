"""Question answering's windows in the graph (the pipeline's SavedModel, `pipeline_serving`):
the context's pieces cut into windows of `[CLS] question [SEP] window [SEP]` by the
tokenizer's layout, each repeating the last `doc_stride` pieces of the one before
(`features.window_starts`, as `encode_questions` and the Python pipeline cut them); and the
band of spans a window's answer may take (TFLite's one window too).
"""

import tensorflow as tf

from kbert.tokenizers import packing


def windows(question_ids, context_ids, sequence_length, doc_stride, separators=1):
    """`features.window_starts` of every question, in the graph.

    Args:
        question_ids, context_ids: ragged int32 [B, (pieces)].
        doc_stride: the pieces a window repeats from the one before (the tokenizers
            library's `stride`, transformers' `doc_stride`). The caller makes sure that it is
            under the context's room of every question whose context needs several windows.
        separators: the separators between the question and the window (2 for RoBERTa).
    Returns:
        `example` (the question of each window), `doc_start`, `doc_length` and `offset` (the
        position of the window's first context piece), int32 [windows].
    """
    questions = tf.cast(question_ids.row_lengths(), tf.int32)
    pieces = tf.cast(context_ids.row_lengths(), tf.int32)
    length = sequence_length - questions - 2 - separators  # the context's room in a window
    step = length - doc_stride
    # A context that fits needs no step; one that does not was refused where the step is
    # not positive (tf.where computes both branches: no division by zero).
    step = tf.maximum(step, 1)
    count = tf.where(pieces <= length, 1, 1 + (pieces - length + step - 1) // step)
    example = tf.repeat(tf.range(tf.size(count)), count)
    doc_start = tf.ragged.range(count).flat_values * tf.gather(step, example)
    doc_length = tf.minimum(tf.gather(pieces, example) - doc_start, tf.gather(length, example))
    return example, doc_start, doc_length, tf.gather(questions, example) + 1 + separators


def window_features(tokenizer, question_ids, context_ids, sequence_length, doc_stride,
                    padded_to=None):
    """Every window of `windows` as model inputs `[CLS] question [SEP] window [SEP]`, packed
    by the tokenizer's layout, as `Tokenizer.pack_row` packs them (RoBERTa: two separators,
    segment ids all 0).

    Returns a dict: `example`, `doc_length`, `offset` as `windows`; `first_piece` (the
    window's first context piece, an index into `context_ids.flat_values`); `position`
    int32 [1, S]; `in_context` bool [W, S] (the positions of the window's context pieces);
    and `features` (`token_ids`, `segment_ids`, `padding_mask` int32 [W, S], S `padded_to`,
    or the longest window without it).
    """
    example, doc_start, doc_length, offset = windows(
        question_ids, context_ids, sequence_length, doc_stride, packing.pair_separators(tokenizer))
    first_piece = tf.gather(tf.cast(context_ids.row_starts(), tf.int32), example) + doc_start
    window_ids = tf.gather(context_ids.flat_values,
                           tf.ragged.range(first_piece, first_piece + doc_length))
    token_ids, segment_ids = packing.concatenated(
        tokenizer, tf.cast(tf.gather(question_ids, example), tf.int32),
        tf.cast(window_ids, tf.int32))
    token_ids = token_ids.to_tensor(tokenizer.pad_id, shape=[None, padded_to])
    segment_ids = segment_ids.to_tensor(0, shape=[None, padded_to])
    width = tf.shape(token_ids)[1] if padded_to is None else padded_to
    position = tf.range(width)[None, :]  # [1, S]
    padding_mask = position < (offset + doc_length + 1)[:, None]
    in_context = (position >= offset[:, None]) & (position < (offset + doc_length)[:, None])
    return {"example": example, "doc_length": doc_length, "offset": offset,
            "first_piece": first_piece, "position": position, "in_context": in_context,
            "features": {"token_ids": token_ids, "segment_ids": segment_ids,
                         "padding_mask": tf.cast(padding_mask, tf.int32)}}


def span_band(width, max_answer_length):
    """bool [width, width]: True where the column (an end) is at or after the row (a start)
    and the span is at most `max_answer_length` positions long."""
    position = tf.range(width)
    reach = position[None, :] - position[:, None]  # end - start
    return (reach >= 0) & (reach < max_answer_length)
