"""Sentence embeddings in TFLite: text in, the model's embedding out, its pooling and
normalisation in the graph (`kbert.tasks.graph.tflite_serving`)."""

from kbert.tasks.graph import tflite_serving


def sentence_embeddings(pipe, model, opts, given):
    """(fast, endpoints, length) of a sentence-embeddings pipeline: `text` -> `embedding`."""
    return tflite_serving.single_texts(pipe, model, opts["truncation"],
                                       lambda result, features: {"embedding": result})


PIPELINES = {"sentence-embeddings": sentence_embeddings}
