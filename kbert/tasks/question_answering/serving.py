"""A question answerer's serving signature (kbert's contract): questions and contexts in,
answers cut from the original context out, as `features.encode_questions` encodes and
`decode.decode_answers` (run_squad.py's rule) decodes in Python; and the windows in the
graph, which the pipeline's signature (`pipeline_serving.py`) cuts too.

In the graph: the context is split into words and tokenized word by word (`words_graph`,
each piece with its characters), cut into windows of `[CLS] question [SEP] window [SEP]`
(RoBERTa's `<s> question </s></s> window </s>`), each repeating the last `doc_stride` pieces
of the one before (`features.window_starts`, as `encode_questions` and the pipeline cut
them), and the model runs on all windows at once.
The best span of every window is read off a dense [S, S] matrix of start + end scores under
a band mask (end >= start, at most `max_answer_length` pieces, both in the window's context,
among its `n_best` starts and ends as `decode_answers`), then the best over the windows of
each question (ties: the earliest, shortest span), and its characters are cut from the
context. SQuAD 2.0 models answer "" when the null score wins by more than the threshold.
"""

import tensorflow as tf

from kbert.tasks.datasets import check_int
from kbert.tasks.graph.signatures import STRINGS, add_ids_endpoint, run_model
from kbert.tasks.question_answering.features import default_doc_stride
from kbert.tokenizers import packing
from kbert.tokenizers.words_graph import piece_spans, split_words, substrings, valid_utf8

# encode_questions' and decode_answers' defaults (doc_stride None: `default_doc_stride`).
DEFAULTS = {"version_2": False, "null_threshold": 0.0, "doc_stride": None,
            "max_answer_length": 30, "max_question_length": 64, "n_best": 20}
_FAR = 2 ** 30  # past any character offset


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


def add_endpoints(archive, model, tokenizer, sequence_length, version_2=None,
                  null_threshold=None, doc_stride=None, max_answer_length=None,
                  max_question_length=None, n_best=None):
    """A `QuestionAnswerer`'s `serving_default` and `serving_ids` on the ExportArchive
    `archive` (the words of a WordPiece or SentencePiece tokenizer:
    `refuse_byte_pair_words`); None: `DEFAULTS`."""
    given = dict(version_2=version_2, null_threshold=null_threshold, doc_stride=doc_stride,
                 max_answer_length=max_answer_length, max_question_length=max_question_length,
                 n_best=n_best)
    options = {k: DEFAULTS[k] if v is None else v for k, v in given.items()}
    for name in ("max_answer_length", "max_question_length", "n_best"):
        check_int(name, options[name], 1)
    specials = tokenizer.special_count(True)
    most = sequence_length - specials - 1
    if options["max_question_length"] > most:
        raise ValueError(
            f"max_question_length={options['max_question_length']} leaves no room for the "
            f"context in sequence_length={sequence_length}: it must be at most {most}.")
    # Questions are cut to max_question_length pieces: every window has at least this room.
    room = sequence_length - options["max_question_length"] - specials
    if options["doc_stride"] is None:
        options["doc_stride"] = default_doc_stride(sequence_length,
                                                   options["max_question_length"], specials)
    check_int("doc_stride", options["doc_stride"], 0)
    if options["doc_stride"] >= room:
        raise ValueError(
            f"doc_stride={options['doc_stride']} (the pieces a window repeats from the one "
            f"before) must be smaller than the window's context length after the longest "
            f"question, {room} pieces (sequence_length={sequence_length} minus "
            f"max_question_length={options['max_question_length']} and {specials} special "
            "tokens). Lower doc_stride or max_question_length, or raise sequence_length.")
    version_2 = bool(options["version_2"])
    threshold = float(options["null_threshold"])
    length, stride = sequence_length, options["doc_stride"]
    top = min(options["n_best"], length)

    def serve(question, context):
        question, context = valid_utf8(question), valid_utf8(context)
        batch = tf.shape(question)[0]
        words = split_words(context)
        # One tokenizer call for the questions and the context words: half the graph.
        ids = tokenizer.tokenize(tf.concat([question, words["text"]], 0))
        question_ids = ids[:batch, :options["max_question_length"]]
        word_pieces = ids[batch:]
        piece_starts, piece_ends = piece_spans(words, word_pieces, tokenizer)
        context_ids = tf.RaggedTensor.from_row_splits(  # [B, (pieces)]
            word_pieces, words["row_splits"], validate=False).merge_dims(1, 2)
        window = window_features(tokenizer, question_ids, context_ids, length, stride,
                                 padded_to=length)
        example, offset = window["example"], window["offset"]
        first_piece, position, features = (window["first_piece"], window["position"],
                                           window["features"])
        outputs = run_model(model, features)
        start_logits, end_logits = outputs["start_logits"], outputs["end_logits"]  # [W, S]
        in_context = window["in_context"]

        def best_of(logits):  # the window's n_best context positions
            chosen = tf.math.top_k(tf.where(in_context, logits, -float("inf")), top).indices
            return in_context & tf.reduce_any(tf.equal(chosen[:, :, None], position[:, None]),
                                              axis=1)

        band = span_band(length, options["max_answer_length"])
        valid = best_of(start_logits)[:, :, None] & best_of(end_logits)[:, None, :] & band
        scores = tf.where(valid, start_logits[:, :, None] + end_logits[:, None, :],
                          -float("inf"))  # [W, S, S]
        # (A segment of only -inf would give float32's lowest: `found` says which have spans.)
        found = tf.math.unsorted_segment_max(tf.cast(tf.reduce_any(valid, axis=[1, 2]),
                                                     tf.int32), example, batch) > 0
        best = tf.where(found, tf.math.unsorted_segment_max(
            tf.reduce_max(scores, axis=[1, 2]), example, batch), -float("inf"))
        # Each position's characters in the context.
        piece = tf.clip_by_value(first_piece[:, None] + position - offset[:, None], 0,
                                 tf.size(piece_starts))  # the last: a dummy, off context
        char_start = tf.where(in_context, tf.gather(tf.concat([piece_starts, [0]], 0), piece),
                              _FAR)  # [W, S]
        char_end = tf.where(in_context, tf.gather(tf.concat([piece_ends, [0]], 0), piece),
                            _FAR)
        # Ties on the score: the earliest start, then the earliest end.
        tied = valid & tf.equal(scores, tf.gather(best, example)[:, None, None])
        start = tf.math.unsorted_segment_min(tf.reduce_min(
            tf.where(tied, char_start[:, :, None], _FAR), axis=[1, 2]), example, batch)
        tied &= tf.equal(char_start, tf.gather(start, example)[:, None])[:, :, None]
        end = tf.math.unsorted_segment_min(tf.reduce_min(
            tf.where(tied, char_end[:, None, :], _FAR), axis=[1, 2]), example, batch)
        score = best
        start, end = tf.where(found, start, 0), tf.where(found, end, 0)
        result = {}
        if version_2:
            null = tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0], example,
                                                batch)
            # In float64, as Python compares the two float32 scores.
            no_answer = ~found | (tf.cast(null, tf.float64) - tf.cast(score, tf.float64)
                                  > threshold)
            score = tf.where(no_answer, null, score)
            start, end = tf.where(no_answer, 0, start), tf.where(no_answer, 0, end)
            result["null_score"] = null
        answer = substrings(context, tf.range(batch), start, end)
        return {"answer": answer, "score": score, "start": start, "end": end, **result}

    archive.add_endpoint("serving_default", serve, [STRINGS, STRINGS])
    add_ids_endpoint(archive, model, lambda features: run_model(model, features))
