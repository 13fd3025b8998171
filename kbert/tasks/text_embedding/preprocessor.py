"""The text embedder's preprocessor: texts -> token ids, cut at the embedder's `max_length`."""

import keras
import numpy as np

from kbert.tasks import preprocessor as base
from kbert.tasks.text_classification.preprocessor import TextClassifierPreprocessor

PREPROCESSOR = "TextEmbedderPreprocessor"


@keras.saving.register_keras_serializable(package="kbert")
class TextEmbedderPreprocessor(TextClassifierPreprocessor):
    """Texts -> `token_ids`, `segment_ids`, `padding_mask` (as the text classifier's); the
    labels `fit` takes are target embeddings, float [N, H] (the embedder's default loss is
    sentence-transformers' `MSELoss`: distilling a teacher's embeddings)."""

    def encode(self, x, y=None, task=None):
        encoded = super().encode(x, None, task)
        if y is not None:
            targets = np.asarray(base.as_list(y, "y"), np.float32)
            rows = len(encoded.features["token_ids"])
            if targets.ndim != 2 or len(targets) != rows:
                raise ValueError(f"An embedder's labels are target embeddings, one row per "
                                 f"text: expected [{rows}, hidden], got {targets.shape}.")
            encoded.targets = (targets,)
        return encoded
