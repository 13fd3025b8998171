"""The layers of kbert/tasks/_heads.py pass the layer checks of docs/design.md."""

import keras
import numpy as np

from kbert.tasks import ClassificationHead, SpanLogits, TokenPooling
from tests.layers import _checks

X = np.random.default_rng(0).normal(size=(3, 4, 6)).astype("float32")
MASK = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]], "int32")


def test_config_round_trips():
    _checks.check_config_round_trip(ClassificationHead(3, dropout=0.2, activation="relu",
                                                       initializer_range=0.05))
    _checks.check_config_round_trip(TokenPooling("max", normalize=True))
    _checks.check_config_round_trip(SpanLogits())


def test_classification_head_shape_fit_and_bfloat16():
    assert tuple(ClassificationHead(5)(X).shape) == (3, 5)
    _checks.check_fit_step(lambda: ClassificationHead(2), [X])
    _checks.check_mixed_bfloat16(lambda dtype: ClassificationHead(2, dtype=dtype), [X])


def test_pooling_and_span_logits_stay_float32_under_mixed_precision():
    # Their sums and the -1e9 of the padding need float32; the outputs say so.
    pooled = TokenPooling("mean", dtype="mixed_bfloat16")(X, MASK)
    start, end = SpanLogits(dtype="mixed_bfloat16")(X[..., :2], MASK)
    for out, shape in ((pooled, (3, 6)), (start, (3, 4)), (end, (3, 4))):
        assert keras.backend.standardize_dtype(out.dtype) == "float32"
        assert tuple(out.shape) == shape
