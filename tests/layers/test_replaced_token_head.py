import keras
import numpy as np
import pytest

from kbert.layers import ReplacedTokenHead
from tests.layers import _checks

X = np.random.default_rng(0).normal(size=(3, 5, 8)).astype("float32")


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def test_config_round_trip():
    head = ReplacedTokenHead(activation="relu", initializer_range=0.1)
    _checks.check_config_round_trip(head)
    assert head.get_config()["activation"] == "relu"
    assert head.get_config()["initializer_range"] == 0.1


def test_one_logit_per_token():
    head = ReplacedTokenHead()
    logits = keras.ops.convert_to_numpy(head(X))
    assert logits.shape == (3, 5)  # [B, S]: no trailing axis of 1
    assert head.compute_output_shape(X.shape) == (3, 5)
    w = {v.path.split("/", 1)[1]: keras.ops.convert_to_numpy(v) for v in head.weights}
    assert w["dense/kernel"].shape == (8, 8) and w["output_dense/kernel"].shape == (8, 1)
    # dense(H) -> gelu (tanh approximation) -> dense(1), on every token independently.
    hidden = gelu_tanh(X @ w["dense/kernel"] + w["dense/bias"])
    expected = (hidden @ w["output_dense/kernel"] + w["output_dense/bias"])[..., 0]
    np.testing.assert_allclose(logits, expected, atol=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="`initializer_range` must be a number > 0, got 0"):
        ReplacedTokenHead(initializer_range=0)
    with pytest.raises(ValueError, match="swish2"):
        ReplacedTokenHead(activation="swish2")


def test_fit_step():
    _checks.check_fit_step(ReplacedTokenHead, [X])


def test_mixed_bfloat16():
    _checks.check_mixed_bfloat16(ReplacedTokenHead, [X])


@pytest.mark.slow
def test_learns_replaced_token_detection():
    """Sigmoid cross-entropy on its logits (ELECTRA's RTD loss): the head separates tokens
    whose vectors say "replaced" from the rest, with positive logits for replaced ones."""
    rng = np.random.default_rng(1)
    replaced = rng.integers(0, 2, (64, 6)).astype("float32")  # [B, S]
    x = rng.normal(size=(64, 6, 8)).astype("float32")
    x[..., 0] += 3.0 * (2 * replaced - 1)  # one feature carries the label
    inputs = keras.Input((6, 8))
    model = keras.Model(inputs, ReplacedTokenHead(initializer_range=0.5)(inputs))
    loss = keras.losses.BinaryCrossentropy(from_logits=True)
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss=loss)
    start = float(loss(replaced, model(x)))
    model.fit(x, replaced, epochs=30, batch_size=64, verbose=0)
    logits = keras.ops.convert_to_numpy(model(x))
    # An untrained head is near log 2 = 0.69; the feature separates the classes almost fully.
    assert start > 0.5
    assert float(loss(replaced, logits)) < 0.1
    assert ((logits > 0) == (replaced == 1)).mean() > 0.97
