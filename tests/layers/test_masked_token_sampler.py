"""MaskedTokenSampler: where it writes, what it samples, and that it passes no gradient.
Frequency checks state their sample count and tolerance (binomial sd sqrt(p (1 - p) / n))."""

import keras
import numpy as np
import pytest

from kbert.layers import MaskedTokenSampler
from kbert.layers.masked_token_sampler import scatter_positions
from tests.layers import _checks

V = 11
TOKEN_IDS = np.array([[2, 5, 7, 9, 4, 0], [3, 3, 8, 1, 6, 10]], "int32")
# Row 0 has a padded prediction slot: it points at position 0 ([CLS]).
POSITIONS = np.array([[1, 3, 0], [2, 4, 5]], "int32")
LOGITS = np.random.default_rng(0).normal(size=(2, 3, V)).astype("float32")


def numpy(x):
    return keras.ops.convert_to_numpy(x)


def sample(layer, logits, token_ids=TOKEN_IDS, positions=POSITIONS):
    replaced, sampled = layer(token_ids, positions, logits)
    return numpy(replaced), numpy(sampled)


def test_config_round_trip():
    layer = MaskedTokenSampler(temperature=0.5, seed=3)
    _checks.check_config_round_trip(layer)
    assert layer.get_config()["temperature"] == 0.5 and layer.get_config()["seed"] == 3


def test_bad_temperature():
    with pytest.raises(ValueError, match="`temperature` must be a number > 0, got 0"):
        MaskedTokenSampler(temperature=0)


def test_writes_the_samples_at_the_masked_positions_only():
    replaced, sampled = sample(MaskedTokenSampler(seed=1), LOGITS)
    assert replaced.shape == (2, 6) and sampled.shape == (2, 3)
    assert replaced.dtype == np.int32 and sampled.dtype == np.int32
    assert np.all((sampled >= 0) & (sampled < V))
    expected = TOKEN_IDS.copy()
    for row in range(2):
        for slot, position in enumerate(POSITIONS[row]):
            if position > 0:
                expected[row, position] = sampled[row, slot]
    # Position 0 ([CLS], where padded slots point) keeps its token whatever was sampled.
    np.testing.assert_array_equal(replaced, expected)


def test_scatter_positions_skips_position_zero():
    out = numpy(scatter_positions(TOKEN_IDS, POSITIONS, np.full((2, 3), 99, "int32")))
    np.testing.assert_array_equal(out[0], [2, 99, 7, 99, 4, 0])
    np.testing.assert_array_equal(out[1], [3, 3, 99, 1, 99, 99])


def test_never_samples_a_token_without_probability():
    # Tokens 0-4 ([PAD], [CLS], ... as a generator learns them) get -1e9: never drawn in
    # 2 x 50 x 40 = 4,000 draws, while the 6 others all are (each expected ~670 times).
    logits = np.zeros((2, 50, V), "float32")
    logits[..., :5] = -1e9
    positions = np.tile(np.arange(1, 51, dtype="int32"), (2, 1))
    token_ids = np.zeros((2, 51), "int32")
    layer = MaskedTokenSampler(seed=2)
    drawn = np.concatenate([sample(layer, logits, token_ids, positions)[1].ravel()
                            for _ in range(40)])
    assert drawn.min() >= 5
    assert set(drawn) == set(range(5, V))


@pytest.mark.parametrize("temperature, expected", [(1.0, 0.75), (0.5, 0.9), (1e6, 0.5)])
def test_temperature(temperature, expected):
    # Two tokens with probabilities 1/4 and 3/4; logits / T give p1 = 3^(1/T) / (1 + 3^(1/T)):
    # 0.75 at T=1, 0.9 at T=0.5, 0.5 as T grows. 8 x 1,000 = 8,000 draws: sd <= 0.0056;
    # allow +- 0.025 (about 4.5 sd; the three values are >= 0.15 apart).
    logits = np.zeros((8, 1000, V), "float32")
    logits[..., 2:] = -1e9
    logits[..., 1] = np.log(3.0)
    positions = np.tile(np.arange(1, 1001, dtype="int32"), (8, 1))
    token_ids = np.zeros((8, 1001), "int32")
    _, sampled = sample(MaskedTokenSampler(temperature=temperature, seed=4), logits,
                        token_ids, positions)
    assert set(np.unique(sampled)) <= {0, 1}
    assert abs((sampled == 1).mean() - expected) < 0.025


def test_seeded_and_new_at_every_call():
    first = [sample(MaskedTokenSampler(seed=5), LOGITS * 0)[1] for _ in range(2)]
    layer = MaskedTokenSampler(seed=5)
    calls = [sample(layer, LOGITS * 0)[1] for _ in range(2)]
    np.testing.assert_array_equal(first[0], first[1])  # same seed, same draws
    np.testing.assert_array_equal(first[0], calls[0])
    assert not np.array_equal(calls[0], calls[1])  # the seed generator moves on


@pytest.mark.filterwarnings("ignore:Gradients do not exist for variables")
def test_no_gradient_reaches_the_generator():
    """In a fit step the downstream weights move and the generator's logits layer does not:
    the discriminator's loss must not train the generator through the sampling."""
    token_ids = keras.Input((6,), dtype="int32")
    positions = keras.Input((3,), dtype="int32")
    hidden = keras.layers.Embedding(V, 8)(token_ids)
    gathered = keras.ops.take_along_axis(hidden, positions[:, :, None], axis=1)
    generator = keras.layers.Dense(V, name="generator")
    replaced, _ = MaskedTokenSampler(seed=6)(token_ids, positions, generator(gathered))
    discriminator = keras.layers.Dense(1, name="discriminator")
    out = discriminator(keras.layers.Embedding(V, 4)(replaced))
    model = keras.Model([token_ids, positions], out)
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    inputs = [np.tile(TOKEN_IDS, (4, 1)), np.tile(POSITIONS, (4, 1))]
    before = {w.path: numpy(w).copy() for w in generator.weights + discriminator.weights}
    target = np.random.default_rng(0).normal(size=(8, 6, 1)).astype("float32")
    model.fit(inputs, target, epochs=1, batch_size=8, verbose=0)
    assert np.array_equal(numpy(generator.kernel), before["generator/kernel"])
    assert np.array_equal(numpy(generator.bias), before["generator/bias"])
    assert not np.allclose(numpy(discriminator.kernel), before["discriminator/kernel"])


def test_mixed_bfloat16():
    # bfloat16 logits (as a mixed-precision generator gives) are sampled in float32: the
    # same draws as float32 logits of the same (bf16-representable) values.
    logits = numpy(keras.ops.cast(keras.ops.cast(LOGITS * 3, "bfloat16"), "float32"))
    layer = MaskedTokenSampler(seed=7, dtype="mixed_bfloat16")
    replaced, sampled = layer(TOKEN_IDS, POSITIONS, keras.ops.cast(logits, "bfloat16"))
    assert keras.backend.standardize_dtype(replaced.dtype) == "int32"
    assert keras.backend.standardize_dtype(sampled.dtype) == "int32"
    _, reference = sample(MaskedTokenSampler(seed=7), logits)
    np.testing.assert_array_equal(numpy(sampled), reference)
