"""A question-answering pipeline's TFLite graph, on TFLite's built-in ops and tensorflow-text's
kernels: question and context in, one window's logits and its best span's UTF-8 bytes out
(transformers' rule, `decode.answer`, with top_k=1 and align_to_words=False; the rest of the
rule runs on the host, `decode.tflite_answer`, which calls `decode.answer`).
Offsets are UTF-8 byte offsets into the context as given, as `kbert.tasks.fill_mask.tflite`
says.
"""

import tensorflow as tf

from kbert.tasks.graph import tflite_serving
from kbert.tasks.graph.signatures import STRINGS
from kbert.tasks.graph.tflite_offsets import dense, pieces_with_offsets, placed
from kbert.tasks.graph.tflite_packing import pack_dense_pairs
from kbert.tasks.question_answering.decode import MASKED_LOGIT
from kbert.tasks.question_answering.windows_graph import span_band


def pack_question(tokenizer, question, context, sequence_length):
    """Ragged ids of questions and contexts -> [CLS] question [SEP] context [SEP], as the
    question-answering pipeline's first window: the question is kept whole (cut only past
    `sequence_length - 3` pieces), the context cut to what is left. Returns the features
    and the question's and the context's piece counts [B, 1]."""
    budget = sequence_length - 3
    a = tf.minimum(tf.cast(question.row_lengths(), tf.int32)[:, None], budget)  # [B, 1]
    b = tf.minimum(tf.cast(context.row_lengths(), tf.int32)[:, None], budget - a)
    features = pack_dense_pairs(tokenizer, dense(question, budget, tokenizer.pad_id), a,
                                dense(context, budget, tokenizer.pad_id), b,
                                sequence_length)
    return features, a, b


def question_answerer_serving(tokenizer, fast, run, sequence_length, max_answer_length):
    """`question`, `context` string [B] -> the first window's logits and the best span:
    `start_logits`, `end_logits` [B, S]; `tokens` [B, S]; `starts`, `ends` int32 [B, S]
    (UTF-8 bytes of the context; -1 off the context); `answer_start`, `answer_end` (bytes of
    the context) and `score` [B]: the best span of at most `max_answer_length` pieces by
    start x end probability (softmax over [CLS] and the context), as the pipeline with
    top_k=1, align_to_words=False, on one window."""
    vocabulary = tf.constant(list(tokenizer.vocabulary))

    def serve(question, context):
        question_ids = fast.tokenize(question)
        ids, starts, ends = pieces_with_offsets(fast, context)
        features, a, b = pack_question(tokenizer, question_ids, ids, sequence_length)
        outputs = run(features)
        start_logits = tf.cast(outputs["start_logits"], tf.float32)
        end_logits = tf.cast(outputs["end_logits"], tf.float32)
        starts = placed(starts, a + 2, b, sequence_length)
        ends = placed(ends, a + 2, b, sequence_length)
        position = tf.range(sequence_length)[None, :]
        allowed = (starts >= 0) | (position == 0)
        probability = lambda logits: tf.nn.softmax(  # noqa: E731
            tf.where(allowed, logits, MASKED_LOGIT))
        on_context = tf.cast(starts >= 0, tf.float32)  # [CLS] is no answer here
        start_p = probability(start_logits) * on_context
        end_p = probability(end_logits) * on_context
        band = tf.cast(span_band(sequence_length, max_answer_length), tf.float32)
        scores = start_p[:, :, None] * end_p[:, None, :] * band[None]  # [B, S, S]
        best = tf.argmax(tf.reshape(scores, [-1, sequence_length * sequence_length]),
                         axis=-1, output_type=tf.int32)
        first, last = best // sequence_length, best % sequence_length
        pick = lambda values, at: tf.gather(values, at[:, None], batch_dims=1)[:, 0]  # noqa
        return {"start_logits": start_logits, "end_logits": end_logits,
                "token_ids": features["token_ids"],
                "tokens": tf.gather(vocabulary, features["token_ids"]),
                "starts": starts, "ends": ends,
                "answer_start": pick(starts, first), "answer_end": pick(ends, last),
                "score": tf.reduce_max(tf.reshape(scores, [-1, sequence_length ** 2]), -1)}

    return serve


def question_answering(pipe, model, opts, given):
    """`pipeline.export_tflite` of `pipe`, a question-answering pipeline: (the TFLite
    tokenizer, its endpoints): one window of `max_seq_len` tokens, its best span and logits;
    the options that need every window are refused (the host applies them)."""
    tflite_serving.pipeline_word_piece_only(pipe, "question answerer",
                                            "its character spans come from FastBertTokenizer")
    top_k, max_seq_len, doc_stride, max_answer_len = pipe.settings(opts)
    for name in ("top_k", "doc_stride", "handle_impossible_answer", "align_to_words"):
        if name in given:
            raise ValueError(
                f"{name}={given[name]!r}: a TFLite question answerer reads one window of "
                f"max_seq_len tokens and returns its best span (top_k=1, "
                f"align_to_words=False) and its logits; apply {name} on the host with "
                f"kbert.pipelines.tflite_entities.answer(context, outputs, row, ...).")
    fast, run = tflite_serving.tokenizer_and_run(pipe, model)
    return fast, {"serving_default": (question_answerer_serving(
        pipe.tokenizer, fast, run, max_seq_len, max_answer_len), [STRINGS, STRINGS])}, \
        max_seq_len


# `pipeline.export_tflite` of each pipeline of the task.
PIPELINES = {"question-answering": question_answering}
