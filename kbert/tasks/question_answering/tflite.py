"""Question answering in TFLite (`kbert.tasks.graph.tflite_serving` says what a task
folder's `tflite.py` gives): question and context in, one window's logits and its best
span's UTF-8 bytes out (transformers' rule, `decode.answer`, with top_k=1 and
align_to_words=False; the rest of the rule runs on the host, `decode.tflite_answer`).
"""

import tensorflow as tf

from kbert.tasks.graph import tflite_serving
from kbert.tasks.graph.packing import lengths
from kbert.tasks.graph.signatures import STRINGS, run_model
from kbert.tasks.graph.tflite_packing import dense, pack_dense, pieces_with_offsets, placed
from kbert.tasks.question_answering.decode import MASKED_LOGIT
from kbert.tasks.question_answering.windows_graph import span_band
from kbert.tokenizers.packing import layout_of, special_count


def pack_question(tokenizer, question, context, sequence_length):
    """Ragged ids of questions and contexts -> [CLS] question [SEP] context [SEP], as the
    question-answering pipeline's first window: the question is kept whole (cut only past
    what a pair has room for), the context cut to what is left. Returns the features, the
    position of the context's first piece and its piece count [B, 1]."""
    budget, pad = sequence_length - special_count(tokenizer, True), tokenizer.pad_id
    a = tf.minimum(lengths(question)[:, None], budget)  # [B, 1]
    b = tf.minimum(lengths(context)[:, None], budget - a)
    features = pack_dense(tokenizer, dense(question, budget, pad), a, sequence_length,
                          dense(context, budget, pad), b)
    return features, a + 1 + layout_of(tokenizer).separators, b


def question_answering(pipe, model, opts, given):
    """A question-answering pipeline's TFLite graph, one window of S = `max_seq_len` pieces:
    `question`, `context` string [B] -> `start_logits`, `end_logits`, `token_ids`, `tokens`
    [B, S]; `starts`, `ends` int32 [B, S] (UTF-8 bytes of the context; -1 off it);
    `answer_start`, `answer_end` (bytes of the context) and `score` [B]: the best span of at
    most `max_answer_len` pieces by start x end probability (softmax over [CLS] and the
    context). The options that need every window are refused (the host applies them)."""
    tflite_serving.word_piece_only(pipe, "question answerer",
                                   "its character spans come from FastBertTokenizer")
    top_k, length, doc_stride, max_answer_len = pipe.settings(opts)
    for name in ("top_k", "doc_stride", "handle_impossible_answer", "align_to_words"):
        if name in given:
            raise ValueError(
                f"{name}={given[name]!r}: a TFLite question answerer reads one window of "
                f"max_seq_len tokens and returns its best span (top_k=1, "
                f"align_to_words=False) and its logits; apply {name} on the host with "
                f"kbert.pipelines.tflite_entities.answer(context, outputs, row, ...).")
    tokenizer, fast = pipe.tokenizer, pipe.tokenizer.tflite_tokenizer()
    vocabulary = tf.constant(list(tokenizer.vocabulary))

    def serve(question, context):
        ids, starts, ends = pieces_with_offsets(fast, context)
        features, first, b = pack_question(tokenizer, fast.tokenize(question), ids, length)
        outputs = run_model(model, features)
        start_logits, end_logits = outputs["start_logits"], outputs["end_logits"]
        starts, ends = placed(starts, first, b, length), placed(ends, first, b, length)
        allowed = (starts >= 0) | (tf.range(length)[None, :] == 0)
        probability = lambda logits: tf.nn.softmax(  # noqa: E731
            tf.where(allowed, logits, MASKED_LOGIT))
        on_context = tf.cast(starts >= 0, tf.float32)  # [CLS] is no answer here
        start_p = probability(start_logits) * on_context
        end_p = probability(end_logits) * on_context
        band = tf.cast(span_band(length, max_answer_len), tf.float32)
        scores = tf.reshape(start_p[:, :, None] * end_p[:, None, :] * band[None],
                            [-1, length * length])  # [B, S * S]
        best = tf.argmax(scores, axis=-1, output_type=tf.int32)
        pick = lambda values, at: tf.gather(values, at[:, None], batch_dims=1)[:, 0]  # noqa
        return {"start_logits": start_logits, "end_logits": end_logits,
                "token_ids": features["token_ids"],
                "tokens": tf.gather(vocabulary, features["token_ids"]),
                "starts": starts, "ends": ends, "answer_start": pick(starts, best // length),
                "answer_end": pick(ends, best % length), "score": tf.reduce_max(scores, -1)}

    return fast, {"serving_default": (serve, [STRINGS, STRINGS])}, length


PIPELINES = {"question-answering": question_answering}
