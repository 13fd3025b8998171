"""Sentence embeddings (sentence-transformers' pooling on a kbert backbone) and search."""

import keras
import numpy as np
from keras import ops

from kbert.layers import _utils
from kbert.tasks import task as task_lib
from kbert.tasks._heads import POOLINGS, TokenPooling


@keras.saving.register_keras_serializable(package="kbert")
class TextEmbedder(task_lib.Task, keras.Model):
    """One vector per text: the backbone's sequence output pooled over the real tokens, as
    sentence-transformers' `Pooling` module, optionally L2-normalized (its `Normalize`).

    all-MiniLM-L6-v2 is `TextEmbedder(backbone, pooling="mean", normalize=True)`.

    Args:
        backbone: a kbert backbone of any family (`kbert.models.Backbone`).
        pooling: "mean" (padding-aware), "cls" (the [CLS] hidden state) or "max" (ignoring
            the padding).
        normalize: L2-normalize the embeddings (cosine similarity is then a dot product).
        max_length: the longest input in tokens (with [CLS] and [SEP]) the embedder was
            trained on, sentence-transformers' `max_seq_length`: `kbert.pipeline`'s
            sentence-embeddings cut texts there, as sentence-transformers does
            (all-MiniLM-L6-v2: 256 of its 512 positions). `None`: the backbone's
            `max_sequence_length`.

    Inputs (a dict): the backbone's inputs, int [B, S].
    Outputs: float32 embeddings [B, H].

    `compile()` defaults: BERT's fine-tuning AdamW (2e-5), mean squared error to target
    embeddings (sentence-transformers' `MSELoss`: distilling a teacher's embeddings) and the
    cosine similarity to them. Contrastive objectives need pairs: compile with your loss.
    """

    output_name = "embeddings"

    def __init__(self, backbone, pooling="mean", normalize=False, max_length=None,
                 preprocessor=None, **kwargs):
        task_lib.family_of(backbone)  # a kbert backbone
        if pooling not in POOLINGS:
            raise ValueError(f"Unknown pooling {pooling!r}. Allowed: {', '.join(POOLINGS)}.")
        if max_length is not None:
            max_length = _utils.check_positive_int("max_length", max_length)
            positions = backbone.config.max_sequence_length
            if max_length > positions:
                raise ValueError(f"max_length={max_length} is longer than the backbone's "
                                 f"max_sequence_length ({positions}).")

        # === Layers ===
        pooler = TokenPooling(pooling, normalize=normalize, dtype=backbone.dtype_policy,
                              name="pooling")

        # === Functional model ===
        inputs = task_lib.backbone_inputs(backbone)
        sequence = backbone(inputs)["sequence_output"]  # [B, S, H]
        embeddings = pooler(sequence, inputs["padding_mask"])  # [B, H]
        super().__init__(inputs=inputs, outputs=embeddings, **kwargs)

        # === Config ===
        self._init_task(backbone, preprocessor, pooling=pooling, normalize=bool(normalize),
                        max_length=max_length)
        self.pooler = pooler

    def head_layers(self):
        return {}  # pooling alone: no weights of its own

    def default_loss(self):
        return keras.losses.MeanSquaredError(), None

    def default_metrics(self):
        return [keras.metrics.CosineSimilarity(name="cosine_similarity")], None


def _normalized(x):
    x = ops.cast(ops.convert_to_tensor(x), "float32")
    norm = ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True))
    return x / ops.maximum(norm, 1e-12)


def cosine_similarity(a, b):
    """Cosine similarity of every row of `a` [N, H] with every row of `b` [M, H] -> [N, M]
    (a backend tensor), as sentence-transformers' `cos_sim`. 1-D inputs count as one row."""
    a, b = ops.convert_to_tensor(a), ops.convert_to_tensor(b)
    a = a[None] if len(a.shape) == 1 else a
    b = b[None] if len(b.shape) == 1 else b
    return ops.matmul(_normalized(a), ops.transpose(_normalized(b)))


def semantic_search(queries, corpus, top_k=10, query_chunk_size=100):
    """The `top_k` corpus rows most cosine-similar to each query.

    Args:
        queries: embeddings [Q, H] (or one [H]).
        corpus: embeddings [C, H].
        top_k: hits per query (at most C).
        query_chunk_size: queries scored at once (memory: chunk x C scores).

    Returns:
        (indices int [Q, k], scores float32 [Q, k]) as numpy arrays, best first; equal
        scores keep the corpus order.
    """
    _utils.check_positive_int("top_k", top_k)
    _utils.check_positive_int("query_chunk_size", query_chunk_size)
    queries = np.asarray(ops.convert_to_numpy(queries), "float32")
    queries = queries[None] if queries.ndim == 1 else queries
    corpus = _normalized(corpus)
    k = min(top_k, int(corpus.shape[0]))
    indices, scores = [np.zeros((0, k), "int64")], [np.zeros((0, k), "float32")]
    for start in range(0, len(queries), query_chunk_size):
        chunk = _normalized(queries[start:start + query_chunk_size])
        chunk_scores = ops.convert_to_numpy(ops.matmul(chunk, ops.transpose(corpus)))
        # A stable sort of the negated scores: best first, equal scores in corpus order.
        best = np.argsort(-chunk_scores, axis=1, kind="stable")[:, :k]
        indices.append(best)
        scores.append(np.take_along_axis(chunk_scores, best, axis=1))
    return np.concatenate(indices), np.concatenate(scores)
