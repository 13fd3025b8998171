"""A text embedder's SavedModel signatures, of both contracts: raw strings in, the embedding
out, every step in the graph (tokenization, packing, the model with its pooling and
normalisation), so that the SavedModel loads with TensorFlow and tensorflow-text alone.

- kbert's (`kbert.export.export_saved_model` of a `TextEmbedder`):
  `add_embedder_endpoints`: `serving_default` (text) and `serving_ids`, -> `embedding`.
- transformers' (`pipeline.export` of sentence-embeddings): `sentence_embeddings`, each text
  fitted to the model as the pipeline fits it -> `embedding`.
"""

from kbert.tasks.graph.signatures import (
    STRINGS,
    add_ids_endpoint,
    run_model,
    single_text_endpoints,
)


def add_embedder_endpoints(archive, model, tokenizer, sequence_length):
    """`serving_default` (`text` string [B]) and `serving_ids` -> `embedding` [B, H]."""

    def serve(features):
        return {"embedding": run_model(model, features)}

    def serve_text(text):
        return serve(tokenizer.pack([tokenizer.tokenize(text)], sequence_length))

    archive.add_endpoint("serving_default", serve_text, [STRINGS])
    add_ids_endpoint(archive, model, serve)


def sentence_embeddings(pipe, model, opts, given):
    """`pipeline.export`'s `serving_default` of a sentence-embeddings pipeline."""
    return single_text_endpoints(pipe, model, opts["truncation"],
                                 lambda result, features: {"embedding": result})
