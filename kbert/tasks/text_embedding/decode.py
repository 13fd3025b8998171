"""A text embedder's outputs as sentence-transformers' `encode` gives them, and as
`kbert.pipeline("sentence-embeddings")` returns them: the texts cut at the embedder's
`max_seq_length` (`sequence_length`), one vector per text (`embeddings`). The pooling and the
normalisation are the model's own (`model.TextEmbedder`: its `TokenPooling` layer), so the
SavedModels (`pipeline_serving`) and TFLite give what Keras gives.
"""

import numpy as np


def sequence_length(positions, max_length):
    """The tokens a sentence-embeddings pipeline cuts texts to: the backbone's `positions`, at
    most the embedder's `max_length` (sentence-transformers' `max_seq_length`; None: no
    cap)."""
    return positions if max_length is None else min(positions, max_length)


def embeddings(rows, return_tensors, single):
    """The model's embedding per text (`rows`, [hidden] each) -> the pipeline's answer: a list
    of floats per text, or with `return_tensors` a float32 array [texts, hidden] ([0, 0]: no
    text); `single` (one text given as a string): that text's alone."""
    stacked = np.stack([np.asarray(r, np.float32) for r in rows]) if rows else \
        np.zeros((0, 0), np.float32)
    if return_tensors:
        return stacked[0] if single else stacked
    out = stacked.tolist()
    return out[0] if single else out
