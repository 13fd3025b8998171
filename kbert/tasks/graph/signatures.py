"""What every exported signature shares: the input specs, running the model, the
`serving_ids` endpoint, the endpoint of one text per row. Each task folder's
`pipeline_serving.py` gives `PIPELINES`: pipeline name -> (pipe, model, opts, given) -> its
SavedModel endpoints {name: (function, input specs)} (`kbert.pipelines.exporting` writes
them; `tflite_serving` says the same of the folders' `tflite.py`)."""

import tensorflow as tf

from kbert.tasks.graph import packing

STRINGS = tf.TensorSpec([None], tf.string)
# The kinds of model (task records' names) whose raw outputs an export's `serving_ids`
# returns, and under which name: one tensor (its name), or None for the model's dict of
# outputs (a question answerer's start and end logits; a backbone's `sequence_output` and
# `pooled_output`). A masked-LM pretrainer takes mask positions too: none.
RAW_OUTPUTS = {"text_classifier": "logits", "token_classifier": "logits",
               "extractive_summarizer": "logits", "text_embedder": "embedding",
               "question_answerer": None, "backbone": None}


def run_model(model, features):
    """The Keras model on packed features (the names it takes), outputs in float32."""
    outputs = model({name: features[name] for name in model.input}, training=False)
    return tf.nest.map_structure(lambda x: tf.cast(x, tf.float32), outputs)


def ragged_rows(values, rows, count):
    """Flat `values` of the rows `rows` (int, non-decreasing) -> ragged [count, (values)]."""
    return tf.RaggedTensor.from_value_rowids(values, tf.cast(rows, tf.int64),
                                             nrows=tf.cast(count, tf.int64), validate=False)


def dense_rows(values, rows, batch, default):
    """`ragged_rows` -> [batch, longest] padded with `default`."""
    return ragged_rows(values, rows, batch).to_tensor(default)


def raw_outputs(model, kind):
    """features -> the raw outputs of `model`, a model of kind `kind` (a key of
    `RAW_OUTPUTS`), by name, in float32 (`serving_ids`)."""
    name = RAW_OUTPUTS[kind]

    def serve(features):
        outputs = run_model(model, features)
        if name is not None:
            return {name: outputs}
        if kind == "backbone":  # DistilBERT has no `pooled_output`
            return {key: outputs[key] for key in ("sequence_output", "pooled_output")
                    if key in outputs}
        return dict(outputs)

    return serve


def add_ids_endpoint(archive, model, serve, length=None):
    """`serving_ids`: `serve(features)` on ids made elsewhere, int32 [B, `length`] (None:
    any length); no `segment_ids` for DistilBERT."""
    ids = tf.TensorSpec([None, length], tf.int32)
    if "segment_ids" in model.input:
        def serve_ids(token_ids, segment_ids, padding_mask):
            return serve({"token_ids": token_ids, "segment_ids": segment_ids,
                          "padding_mask": padding_mask})

        archive.add_endpoint("serving_ids", serve_ids, [ids] * 3)
    else:
        def serve_ids_without_segments(token_ids, padding_mask):
            return serve({"token_ids": token_ids, "padding_mask": padding_mask})

        archive.add_endpoint("serving_ids", serve_ids_without_segments, [ids] * 2)


def single_text_endpoints(pipe, model, truncation, outputs, max_length=None):
    """`pipeline.export`'s `serving_default` of a pipeline on single texts (feature
    extraction, sentence embeddings): text -> `outputs(model outputs, features)`, the text
    fitted to the model as the pipeline fits it (too long: the call fails unless
    `truncation`)."""
    tokenizer = pipe.tokenizer

    def serve(text):
        first, _, checks = packing.fit_call(pipe, packing.ids(tokenizer, text), None,
                                            truncation, max_length)
        features = packing.pack(tokenizer, first)
        with tf.control_dependencies(checks):
            return outputs(run_model(model, features), features)

    return {"serving_default": (serve, [STRINGS])}
