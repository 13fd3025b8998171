import keras
import numpy as np
import pytest

from kbert.models import BertBackbone
from kbert.training import WarmupSchedule, create_optimizer
from tests.helpers import TINY, decayed_paths


def values(schedule, steps):
    return [float(keras.ops.convert_to_numpy(schedule(s))) for s in steps]


def test_warmup_then_linear_decay():
    schedule = WarmupSchedule(1e-3, warmup_steps=10, total_steps=110)
    got = values(schedule, [0, 5, 10, 60, 110, 200])
    np.testing.assert_allclose(got, [0, 5e-4, 1e-3, 5e-4, 0, 0], atol=1e-9)


def test_polynomial_and_constant():
    poly = WarmupSchedule(1e-3, 0, 100, decay="polynomial", power=0.5, end_learning_rate=1e-5)
    np.testing.assert_allclose(values(poly, [75]), [(1e-3 - 1e-5) * 0.5 + 1e-5], rtol=1e-6)
    const = WarmupSchedule(2e-3, 4, 100, decay="constant")
    np.testing.assert_allclose(values(const, [2, 50, 99]), [1e-3, 2e-3, 2e-3], rtol=1e-6)


def test_schedule_round_trip():
    schedule = WarmupSchedule(1e-3, 10, 100, decay="polynomial", power=2.0)
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert values(again, [3, 40]) == values(schedule, [3, 40])


def test_errors():
    with pytest.raises(ValueError, match="Unknown decay 'cosine'. Allowed: linear, polynomial"):
        WarmupSchedule(1e-3, 0, 10, decay="cosine")
    with pytest.raises(ValueError, match="warmup_steps=20, total_steps=10"):
        WarmupSchedule(1e-3, 20, 10)
    with pytest.raises(ValueError, match="Unknown optimizer 'sgd'. Allowed: adamw, lamb"):
        create_optimizer("sgd")
    with pytest.raises(ValueError, match="gradient_accumulation_steps must be an integer >= 1"):
        create_optimizer(gradient_accumulation_steps=0)


def randomized(variables):
    """No zeros (biases and beta start at 0, where decay would change nothing)."""
    rng = np.random.default_rng(0)
    for v in variables:
        v.assign(rng.uniform(0.5, 1.5, v.shape).astype("float32"))
    return variables


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_weight_decay_skips_layer_norm_and_bias(name):
    """One step of zero gradients moves only what weight decay touches: every kernel and
    embedding table of a BERT backbone shrinks by lr * weight_decay, and no LayerNorm gamma
    or beta and no bias moves."""
    variables = randomized(BertBackbone(**TINY).trainable_variables)
    optimizer = create_optimizer(name, learning_rate=0.1, total_steps=10, weight_decay=0.1)
    assert isinstance(optimizer, keras.optimizers.AdamW if name == "adamw" else keras.optimizers.Lamb)
    spared = {v.path for v in variables if v.path.rsplit("/", 1)[-1] in ("gamma", "beta", "bias")}
    assert len(spared) == 19 and len(variables) == 31  # 5 LayerNorms, 9 dense biases
    before = [keras.ops.convert_to_numpy(v).copy() for v in variables]
    optimizer.apply([keras.ops.zeros_like(v) for v in variables], variables)
    for v, old in zip(variables, before):
        new = keras.ops.convert_to_numpy(v)
        if v.path in spared:
            np.testing.assert_array_equal(new, old, err_msg=v.path)
        else:  # decoupled decay at the step's learning rate (0.1, no warm-up): x 0.99
            np.testing.assert_allclose(new, old * (1 - 0.1 * 0.1), rtol=1e-6, err_msg=v.path)
    assert decayed_paths(optimizer, variables) == {v.path for v in variables} - spared


@pytest.mark.parametrize("name", ["adamw", "lamb"])
@pytest.mark.parametrize("weight_decay", [0, 0.0, None])
def test_no_weight_decay(name, weight_decay):
    variables = randomized(BertBackbone(**TINY).trainable_variables)
    optimizer = create_optimizer(name, learning_rate=0.1, total_steps=10,
                                 weight_decay=weight_decay)
    assert decayed_paths(optimizer, variables) == set()


def apply(optimizer, variable, gradient):
    optimizer.apply([keras.ops.convert_to_tensor(gradient)], [variable])
    return keras.ops.convert_to_numpy(variable).copy()


def clip(gradient, norm):
    return gradient * min(1.0, norm / np.linalg.norm(gradient))


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_gradient_accumulation_and_clipping(name):
    """With 2 accumulation steps and clipnorm 0.5, the weights move once every 2 steps, by
    the update of a plain optimizer given the mean gradient clipped to norm 0.5."""
    settings = dict(learning_rate=0.1, decay="constant", total_steps=10, weight_decay=0)
    optimizer = create_optimizer(name, gradient_accumulation_steps=2, clipnorm=0.5, **settings)
    reference = create_optimizer(name, clipnorm=None, **settings)
    rng = np.random.default_rng(0)
    start = rng.normal(size=6).astype("float32")
    ours, theirs = keras.Variable(start, name="w"), keras.Variable(start, name="w")
    # Big gradients (norm ~10) in different directions: their mean has norm > 0.5, and
    # clipping each before averaging would give another direction. Then small ones whose
    # mean (norm 0.3) is not clipped (their sum, norm 0.6, would be).
    big = [rng.normal(size=6).astype("float32") * 4 for _ in range(2)]
    small = [np.array([0.4, 0, 0.1, 0, 0, 0], "float32"),
             np.array([0, -0.4, 0.1, 0, 0, 0], "float32")]
    mean_big, mean_small = np.mean(big, axis=0), np.mean(small, axis=0)
    assert np.linalg.norm(mean_big) > 1.0 and np.linalg.norm(mean_small) < 0.5
    np.testing.assert_array_equal(apply(optimizer, ours, big[0]), start)  # accumulated only
    expected = apply(reference, theirs, clip(mean_big, 0.5))
    np.testing.assert_allclose(apply(optimizer, ours, big[1]), expected, rtol=1e-5, atol=1e-7)
    assert not np.allclose(expected, start)
    np.testing.assert_array_equal(apply(optimizer, ours, small[0]), expected)
    # The second update depends on the size of the first gradient (Adam's moments), so an
    # unclipped first step would show here.
    expected = apply(reference, theirs, mean_small)
    np.testing.assert_allclose(apply(optimizer, ours, small[1]), expected, rtol=1e-5, atol=1e-7)
    assert int(optimizer.iterations) == 2  # updates (4 batches)
    assert optimizer.gradient_accumulation_steps == 2 and optimizer.global_clipnorm == 0.5
