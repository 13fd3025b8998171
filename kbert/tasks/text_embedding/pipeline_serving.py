"""`pipeline.export` of sentence-embeddings (transformers' contract): each text fitted to the
model as the pipeline fits it -> `embedding` [B, hidden], the model's pooling and
normalisation in the graph."""

from kbert.tasks.graph.signatures import single_text_endpoints


def sentence_embeddings(pipe, model, opts, given):
    """`pipeline.export`'s `serving_default` of a sentence-embeddings pipeline."""
    return single_text_endpoints(pipe, model, opts["truncation"],
                                 lambda result, features: {"embedding": result})


PIPELINES = {"sentence-embeddings": sentence_embeddings}
