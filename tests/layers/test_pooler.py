import keras
import numpy as np

from kbert.layers import Pooler
from tests.layers import _checks

X = np.random.default_rng(0).normal(size=(3, 4, 6)).astype("float32")


def test_config_round_trip():
    _checks.check_config_round_trip(Pooler(initializer_range=0.05))


def test_output_is_tanh_dense_of_first_token():
    layer = Pooler()
    out = keras.ops.convert_to_numpy(layer(X))
    assert out.shape == (3, 6)
    kernel = keras.ops.convert_to_numpy(layer.dense.kernel)
    bias = keras.ops.convert_to_numpy(layer.dense.bias)
    np.testing.assert_allclose(out, np.tanh(X[:, 0] @ kernel + bias), atol=1e-6)


def test_fit_step():
    _checks.check_fit_step(Pooler, [X])


def test_mixed_bfloat16():
    _checks.check_mixed_bfloat16(Pooler, [X])
