"""A token-classification pipeline in TFLite, on TFLite's built-in ops and tensorflow-text's
kernels: text in, every position's tag with its UTF-8 byte span out.

What TFLite cannot do is left to the host: grouping tokens into entities
(`aggregation_strategy`) needs variable-length outputs per text (boolean masks, segment
reductions and ragged rows, without TFLite kernels), so the model returns every token and
`decode.entities` applies the pipeline's rule (`decode.decode`, numpy only) to one row of
its outputs.
"""

import tensorflow as tf

from kbert.tasks.graph import tflite_serving
from kbert.tasks.graph.signatures import STRINGS
from kbert.tasks.graph.tflite_offsets import pieces_with_offsets, placed
from kbert.tasks.graph.tflite_packing import pack_text
from kbert.tasks.token_classification.decode import strategy_and_ignored


def token_classifier_serving(tokenizer, fast, run, names, sequence_length):
    """`text` string [B] -> every position's tag and its characters: `token_ids`,
    `tokens` (the vocabulary's pieces), `logits`, `probabilities` [B, S, tags], `label_id`,
    `label` [B, S], `starts`, `ends` (UTF-8 bytes of the text; -1 at [CLS], [SEP] and padding),
    `padding_mask` [B, S]."""
    vocabulary = tf.constant(list(tokenizer.vocabulary))
    budget = sequence_length - 2

    def serve(text):
        ids, starts, ends = pieces_with_offsets(fast, text)
        features = pack_text(tokenizer, ids, sequence_length)
        count = tf.minimum(tf.cast(ids.row_lengths(), tf.int32), budget)[:, None]
        logits = run(features)
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"token_ids": features["token_ids"],
                "tokens": tf.gather(vocabulary, features["token_ids"]),
                "logits": logits, "probabilities": tf.nn.softmax(logits),
                "label_id": label_id, "label": tf.gather(tf.constant(names), label_id),
                "starts": placed(starts, 1, count, sequence_length),
                "ends": placed(ends, 1, count, sequence_length),
                "padding_mask": features["padding_mask"]}

    return serve


def token_classification(pipe, model, opts, given):
    """`pipeline.export_tflite` of `pipe`, a token-classification pipeline: (the TFLite
    tokenizer, its endpoints). Every token comes back, so `aggregation_strategy` and
    `ignore_labels` are refused (the host applies them)."""
    tflite_serving.pipeline_word_piece_only(pipe, "token classifier",
                                            "its character spans come from FastBertTokenizer")
    strategy, ignore = strategy_and_ignored(opts)
    if strategy != "none" or ignore != ["O"]:
        raise ValueError(
            f"aggregation_strategy={strategy!r}, ignore_labels={ignore!r}: a TFLite token "
            f"classifier returns every token (grouping needs ops TFLite has no kernel for); "
            f"export without them and group on the host with kbert.pipelines"
            f".tflite_entities.entities(text, outputs, row, label_names, aggregation_strategy=...).")
    fast, run = tflite_serving.tokenizer_and_run(pipe, model)
    serve = token_classifier_serving(pipe.tokenizer, fast, run, list(pipe.source.label_names),
                                     pipe.max_length)
    return fast, {"serving_default": (serve, [STRINGS])}, pipe.max_length


# `pipeline.export_tflite` of each pipeline of the task.
PIPELINES = {"token-classification": token_classification}
