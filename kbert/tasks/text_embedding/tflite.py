"""A text embedder in TFLite (TFLite's built-in ops and tensorflow-text's kernels): text in,
the model's embedding out, its pooling and normalisation in the graph; for
`kbert.serving.export_tflite` of a `TextEmbedder` (`model_outputs`, `model_endpoints`) and
`pipeline.export_tflite` of sentence-embeddings (`PIPELINES`). See
`kbert.tasks.graph.tflite_serving`.
"""

import tensorflow as tf

from kbert.tasks.graph import tflite_serving
from kbert.tasks.graph.signatures import run_model


def model_outputs(model, label_names):
    """features -> {"embedding": [B, hidden]}."""
    return lambda features: {"embedding": run_model(model, features)}


def model_endpoints(model, tokenizer, fast, sequence_length, outputs, options):
    """`serving_default`: `text` -> `outputs`."""
    return tflite_serving.text_endpoint(tokenizer, fast, sequence_length, outputs)


def sentence_embeddings(pipe, model, opts, given):
    """(fast, endpoints) of a sentence-embeddings pipeline: `text` -> `embedding`."""
    return tflite_serving.single_texts(pipe, model, opts["truncation"],
                                       lambda result, features: {
                                           "embedding": tf.cast(result, tf.float32)})


# `pipeline.export_tflite` of each pipeline of the task.
PIPELINES = {"sentence-embeddings": sentence_embeddings}
