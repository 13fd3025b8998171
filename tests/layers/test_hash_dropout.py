"""HashDropout's mask statistics. Tolerances are stated per check; with n elements and drop
rate p the standard deviation of the observed rate is sqrt(p (1 - p) / n)."""

import keras
import numpy as np
import pytest

from kbert.layers import HashDropout
from tests.layers import _checks

N = (50, 40, 500)  # 1,000,000 elements


def dropped(layer, x):
    return keras.ops.convert_to_numpy(layer(x, training=True)) == 0


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_rate_and_scale(rate):
    x = np.ones(N, "float32")
    layer = HashDropout(rate)
    out = keras.ops.convert_to_numpy(layer(x, training=True))
    # 1e6 elements: sd = 3e-4 (rate 0.1) / 5e-4 (0.5); allow +- 0.25%, about 5-8 sd.
    assert abs((out == 0).mean() - rate) < 0.0025
    np.testing.assert_allclose(out[out != 0], 1 / (1 - rate), rtol=1e-6)


def test_no_pattern_between_neighbours_or_calls():
    rate = 0.1
    layer = HashDropout(rate)
    x = np.ones(N, "float32")
    a, b = dropped(layer, x), dropped(layer, x)
    # Independence: P(both dropped) = rate^2 = 0.01 (sd 1e-4 over 1e6 pairs); allow +- 0.1%.
    assert abs((a & b).mean() - rate**2) < 0.001  # two calls (two training steps)
    flat = a.reshape(-1)
    assert abs((flat[1:] & flat[:-1]).mean() - rate**2) < 0.001  # adjacent elements
    assert abs((a[:, :, 1:] & a[:, :, :-1]).mean() - rate**2) < 0.001
    assert abs((a[1:] & a[:-1]).mean() - rate**2) < 0.001  # same position, next example
    # Every slice along each axis sees the rate (no dead rows or columns); sd over the
    # 20,000 elements of a [40, 500] slice is 0.0021, over 25,000 of a [50, 500] slice 0.0019.
    assert np.all(np.abs(a.mean(axis=(1, 2)) - rate) < 0.015)
    assert np.all(np.abs(a.mean(axis=(0, 2)) - rate) < 0.015)


def test_seeded_runs_repeat_and_inference_is_identity():
    x = np.ones((8, 64), "float32")
    keras.utils.set_random_seed(7)
    first = [dropped(HashDropout(0.3), x) for _ in range(2)]
    keras.utils.set_random_seed(7)
    second = [dropped(HashDropout(0.3), x) for _ in range(2)]
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(HashDropout(0.3)(x, training=False), x)
    np.testing.assert_array_equal(HashDropout(0.0)(x, training=True), x)


def test_bad_rate():
    with pytest.raises(ValueError, match=r"`rate` must be a number in \[0, 1\), got 1.0"):
        HashDropout(1.0)


def test_config_round_trip():
    _checks.check_config_round_trip(HashDropout(0.2, seed=3))


def test_mixed_bfloat16():
    # float32 input: the layer's policy, not its input, must make the output bfloat16.
    x = np.ones((4, 64), "float32")
    call = lambda layer, tensors: layer(tensors[0], training=True)  # noqa: E731
    _checks.check_mixed_bfloat16(lambda **kw: HashDropout(0.5, **kw), [x], call=call)
    out = HashDropout(0.5, dtype="mixed_bfloat16")(x, training=True)
    out = keras.ops.convert_to_numpy(keras.ops.cast(out, "float32"))
    # It still drops (256 elements at rate 0.5: ~128 zeros, sd 8) and scales the rest by 2.
    assert 64 < (out == 0).sum() < 192
    np.testing.assert_array_equal(out[out != 0], 2.0)


@pytest.mark.slow
def test_trains_inside_a_model():
    """Under a jit-compiled `fit`: dropout is applied, with a new mask at every step, and the
    gradient flows through it to the layers below."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 16)).astype("float32")
    inputs = keras.Input((16,))
    below = keras.layers.Dense(16, use_bias=False, kernel_initializer="identity")
    above = keras.layers.Dense(1, use_bias=False, kernel_initializer="ones")
    model = keras.Model(inputs, above(HashDropout(0.5)(below(inputs))))
    model.compile(loss="mse")
    target = x.sum(1, keepdims=True)  # what the model gives without dropout: loss 0
    assert model.evaluate(x, target, verbose=0) < 1e-8
    # Learning rate 0: the weights stay, so each step's loss is that step's mask's alone.
    # With rate 0.5 the error of a row is sum_i x_i (2 keep_i - 1): mean square ~16.
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse", jit_compile=True)
    losses = model.fit(x, target, epochs=4, batch_size=64, verbose=0).history["loss"]
    assert min(losses) > 4.0, losses  # dropout was on in training (0 if it returned x)
    assert len(set(losses)) == 4, losses  # and drew a new mask at every step
    before = keras.ops.convert_to_numpy(below.kernel).copy()
    model.compile(optimizer=keras.optimizers.SGD(1e-3), loss="mse", jit_compile=True)
    model.fit(x, target, epochs=1, batch_size=64, verbose=0)
    moved = np.abs(keras.ops.convert_to_numpy(below.kernel) - before)
    assert moved.max() > 1e-4  # the gradient reaches the layer below the dropout


def test_row_offset_continues_the_global_batch():
    """A replica's rows, hashed with its row offset, are the global batch's rows."""
    from kbert.layers.hash_dropout import _hash_bits

    whole = keras.ops.convert_to_numpy(_hash_bits((6, 5, 7), np.uint32(1234)))
    for first in (0, 2, 4):
        part = keras.ops.convert_to_numpy(_hash_bits((2, 5, 7), np.uint32(1234), row_offset=first))
        np.testing.assert_array_equal(part, whole[first:first + 2])
    assert not np.array_equal(whole[:2], whole[2:4])
