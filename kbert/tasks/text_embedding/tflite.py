"""A text embedder in TFLite (TFLite's built-in ops and tensorflow-text's kernels): text in,
the model's embedding out, its pooling and normalisation in the graph: a sentence-embeddings
pipeline (`PIPELINES`). See `kbert.tasks.graph.tflite_serving`.
"""

import tensorflow as tf

from kbert.tasks.graph import tflite_serving


def sentence_embeddings(pipe, model, opts, given):
    """(fast, endpoints) of a sentence-embeddings pipeline: `text` -> `embedding`."""
    return tflite_serving.single_texts(pipe, model, opts["truncation"],
                                       lambda result, features: {
                                           "embedding": tf.cast(result, tf.float32)})


# `pipeline.export_tflite` of each pipeline of the task.
PIPELINES = {"sentence-embeddings": sentence_embeddings}
