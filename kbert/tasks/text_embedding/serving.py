"""A text embedder's SavedModel signatures of kbert's contract
(`kbert.serving.export_saved_model` of a `TextEmbedder`): raw strings in, the embedding out,
every step in the graph (tokenization, packing, the model with its pooling and
normalisation), so that the SavedModel loads with TensorFlow and tensorflow-text alone.
`add_endpoints`: `serving_default` (text) and `serving_ids`, -> `embedding`. The pipeline's
(transformers' contract) is `pipeline_serving`.
"""

from kbert.tasks.graph.signatures import STRINGS, add_ids_endpoint, run_model


def add_endpoints(archive, model, tokenizer, sequence_length):
    """`serving_default` (`text` string [B]) and `serving_ids` -> `embedding` [B, H]."""

    def serve(features):
        return {"embedding": run_model(model, features)}

    def serve_text(text):
        return serve(tokenizer.pack([tokenizer.tokenize(text)], sequence_length))

    archive.add_endpoint("serving_default", serve_text, [STRINGS])
    add_ids_endpoint(archive, model, serve)

