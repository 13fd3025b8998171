"""`pipeline.export` of question answering (transformers' contract): transformers' (4.57)
answers in the graph, as `decode.answer` makes them in Python.

The context's tokens, their characters and words are the tokenizer's `graph_encode`, as
`Encoder.encode` makes them (a special-token literal typed in it is its token, of no word),
cut into windows of `[CLS] question [SEP] window [SEP]` that repeat `doc_stride` tokens of
the one before (`windows_graph.window_features`), and the model runs on every window of the
batch at once. Per window: softmax of the start and end logits over its context tokens and
[CLS] (the null score is [CLS]'s start x end), the start x end scores of spans shorter than
`max_answer_len` on a dense [W, S, S] matrix, its `pre_top_k` best (of equal scores, the
earlier (start, end), as numpy's argmax), each widened to its words' characters inside the
window. Per question: equal answers (lower-cased) merged into the first with their scores
added, the null answer appended, the `top_k` best kept (of equal scores, the earlier).
"""

import tensorflow as tf

from kbert.tasks.graph import packing as graph
from kbert.tasks.graph.signatures import STRINGS, dense_rows, run_model
from kbert.tasks.question_answering.decode import MASKED_LOGIT
from kbert.tasks.question_answering.windows_graph import span_band, window_features
from kbert.tokenizers import normalization
from kbert.tokenizers.words_graph import substrings, valid_utf8


def question_answering(pipe, model, opts, given):
    # window_features packs <s> question </s></s> window </s> for RoBERTa (the tokenizer's
    # pair_separators); `specials` counts all four.
    specials = pipe.special_count(True)
    top_k, max_seq_len, doc_stride, max_answer_len = pipe.settings(opts)
    impossible = bool(opts["handle_impossible_answer"])
    words = bool(opts["align_to_words"])
    pre_top_k = top_k * 2 + 10 if words else top_k
    tokenizer = pipe.tokenizer
    too_long = (f"A question leaves no room for the context in max_seq_len={max_seq_len} "
                f"with the {specials} special tokens of a pair (InputTooLongError). Shorten "
                "the question or raise max_seq_len. Question tokens, max_seq_len:")
    overlap = (f"doc_stride={doc_stride} must be smaller than the context's room in a window "
               f"(max_seq_len={max_seq_len} minus the question's tokens and {specials} "
               "special tokens). Lower doc_stride or raise max_seq_len. Question tokens:")

    def serve(question, context):
        question, context = valid_utf8(question), valid_utf8(context)
        batch = tf.shape(question)[0]
        checks = [tf.debugging.Assert(tf.equal(batch, tf.shape(context)[0]), [
            "Questions and contexts don't have the same lengths:", batch, tf.shape(context)[0]])]
        checks += [tf.debugging.Assert(tf.reduce_all(tf.strings.length(strings) > 0),
                                       [f"`{name}` cannot be empty"])
                   for name, strings in (("question", question), ("context", context))]
        question_ids = graph.ids(tokenizer, question)
        context_ids, tokens = _context(context, tokenizer, pipe.specials)
        questions = graph.lengths(question_ids)
        room = max_seq_len - questions - specials
        cut = graph.lengths(context_ids) > room
        checks += [tf.debugging.Assert(~tf.reduce_any(cut & (room <= 0)),
                                       [too_long, tf.reduce_max(questions), max_seq_len]),
                   tf.debugging.Assert(~tf.reduce_any(cut & (room > 0) & (doc_stride >= room)),
                                       [overlap, tf.reduce_max(questions)])]
        with tf.control_dependencies(checks):
            window = window_features(tokenizer, question_ids, context_ids, max_seq_len,
                                     doc_stride)
        outputs = run_model(model, window["features"])
        example = window["example"]
        position = window["position"]  # [1, S]
        on_cls = tf.equal(position, 0)
        allowed = window["in_context"] | on_cls  # [W, S]

        def probabilities(logits):
            return tf.nn.softmax(tf.where(allowed, logits, MASKED_LOGIT))

        start, end = probabilities(outputs["start_logits"]), probabilities(outputs["end_logits"])
        # A sum over [CLS] alone: an empty batch has no [:, 0].
        null = tf.math.unsorted_segment_min(
            tf.reduce_sum(tf.where(on_cls, start * end, 0.0), axis=1), example, batch)
        start, end = tf.where(on_cls, 0.0, start), tf.where(on_cls, 0.0, end)
        width = tf.shape(start)[1]
        band = span_band(width, max_answer_len)  # [S, S]
        # The window's own positions only (the pipeline's matrix is the window's size):
        # its disallowed ones score 0 there and may be drawn, then dropped, as there.
        real = window["features"]["padding_mask"] > 0
        spans = tf.where(real[:, :, None] & real[:, None, :],
                         tf.where(band, start[:, :, None] * end[:, None, :], 0.0), -1.0)
        scores, index = tf.math.top_k(tf.reshape(spans, [tf.size(example), width * width]),
                                      k=tf.minimum(pre_top_k, width * width))
        first = index // width  # [W, K] positions
        last = index - first * width
        keep = ((scores >= 0) & tf.gather(allowed, first, batch_dims=1)
                & tf.gather(allowed, last, batch_dims=1))
        windows = tf.broadcast_to(tf.range(tf.size(example))[:, None], tf.shape(index))
        span = {name: tf.boolean_mask(value, keep) for name, value in
                (("score", scores), ("window", windows), ("first", first), ("last", last))}
        chars = _characters(tokens, window, span, words)
        row = tf.gather(example, span["window"])  # non-decreasing: windows are in order
        text = substrings(context, row, chars[0], tf.maximum(chars[1], chars[0]))
        return _ranked(span["score"], text, chars, row, null, batch, top_k, impossible)

    return {"serving_default": (serve, [STRINGS, STRINGS])}


def _context(context, tokenizer, specials):
    """The contexts' ids ragged [B, (tokens)] and, flat per token, `starts`, `ends`
    (characters), `word_first` / `word_last` (flat indices of its word's first and last
    tokens) and `has_word`, from the tokenizer's `graph_encode`: a word is BERT's (WordPiece),
    a whitespace-separated chunk (SentencePiece) or a GPT-2 piece (byte-level BPE); a
    special literal typed in the context is its token and of no word."""
    encoded = tokenizer.graph_encode(context, specials)
    word = encoded["words"].flat_values
    index = tf.range(tf.size(word))
    has_word = word >= 0
    count = tf.reduce_max(tf.concat([word, [-1]], 0)) + 1
    at = tf.maximum(word, 0)
    first = tf.math.unsorted_segment_min(tf.boolean_mask(index, has_word),
                                         tf.boolean_mask(word, has_word), count)
    last = tf.math.unsorted_segment_max(tf.boolean_mask(index, has_word),
                                        tf.boolean_mask(word, has_word), count)
    return encoded["ids"], {
        "starts": encoded["starts"].flat_values, "ends": encoded["ends"].flat_values,
        "word_first": tf.where(has_word, tf.gather(tf.concat([first, [0]], 0), at), index),
        "word_last": tf.where(has_word, tf.gather(tf.concat([last, [0]], 0), at), index),
        "has_word": has_word}


def _characters(tokens, window, span, words):
    """(first, last) characters of each span in its context: its tokens' (0 on [CLS]), or
    with `words` those of its words' tokens inside its window (`QuestionAnsweringPipeline.
    _window`'s word_starts / word_ends) where both its tokens have a word."""
    # Per token, flat over the batch; a dummy last entry for [CLS].
    starts = tf.concat([tokens["starts"], [0]], 0)
    ends = tf.concat([tokens["ends"], [0]], 0)
    first_token = tf.gather(window["first_piece"], span["window"])
    last_token = first_token + tf.gather(window["doc_length"], span["window"]) - 1
    offset = tf.gather(window["offset"], span["window"])
    dummy = tf.size(starts) - 1
    # Every kept position but [CLS] is one of the window's context tokens.
    on_start, on_end = span["first"] > 0, span["last"] > 0
    start_token = tf.where(on_start, first_token + span["first"] - offset, dummy)
    end_token = tf.where(on_end, first_token + span["last"] - offset, dummy)
    if words:
        has_word = tf.concat([tokens["has_word"], [False]], 0)
        both = (on_start & on_end & tf.gather(has_word, start_token)
                & tf.gather(has_word, end_token))
        start_token = tf.where(both, tf.maximum(
            tf.gather(tf.concat([tokens["word_first"], [dummy]], 0), start_token),
            first_token), start_token)
        end_token = tf.where(both, tf.minimum(
            tf.gather(tf.concat([tokens["word_last"], [dummy]], 0), end_token), last_token),
            end_token)
    return tf.gather(starts, start_token), tf.gather(ends, end_token)


def _ranked(score, text, chars, row, null, batch, top_k, impossible):
    """Each question's answers: spans of equal lower-cased text merged into the first (their
    scores added), the null answer after them, the `top_k` best (ties: the earlier)."""
    first, last = chars
    key = dense_rows(normalization.lower(text), row, batch, "")  # [B, C]
    present = dense_rows(tf.ones_like(row, tf.bool), row, batch, False)
    count = tf.shape(key)[1]
    same = (tf.equal(key[:, :, None], key[:, None, :]) & present[:, :, None]
            & present[:, None, :])  # [B, C, C]
    index = tf.range(count)
    owner = tf.reduce_min(tf.where(same, index, count), axis=2)  # the first of its answer
    # In float64, as Python adds the float32 scores.
    total = tf.reduce_sum(tf.where(
        tf.equal(owner[:, :, None], index[None, None, :]),
        tf.cast(dense_rows(score, row, batch, 0.0), tf.float64)[:, :, None], 0.0), axis=1)
    merged = present & tf.equal(owner, index[None, :])
    ranked = {"score": tf.where(merged, total, -float("inf")),
              "answer": dense_rows(text, row, batch, ""),
              "start": dense_rows(first, row, batch, 0), "end": dense_rows(last, row, batch, 0)}
    if impossible:
        ranked = {"score": tf.concat([ranked["score"], tf.cast(null, tf.float64)[:, None]], 1),
                  "answer": tf.concat([ranked["answer"], tf.fill([batch, 1], "")], 1),
                  "start": tf.concat([ranked["start"], tf.zeros([batch, 1], tf.int32)], 1),
                  "end": tf.concat([ranked["end"], tf.zeros([batch, 1], tf.int32)], 1)}
    scores, best = tf.math.top_k(ranked["score"],
                                 k=tf.minimum(top_k, tf.shape(ranked["score"])[1]))
    found = scores > -float("inf")
    return {"answer": tf.where(found, tf.gather(ranked["answer"], best, batch_dims=1), ""),
            "score": tf.where(found, tf.cast(scores, tf.float32), 0.0),
            "start": tf.where(found, tf.gather(ranked["start"], best, batch_dims=1), -1),
            "end": tf.where(found, tf.gather(ranked["end"], best, batch_dims=1), -1),
            "num_answers": tf.reduce_sum(tf.cast(found, tf.int32), axis=1)}


PIPELINES = {"question-answering": question_answering}
