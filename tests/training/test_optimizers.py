import keras
import numpy as np
import pytest

from kbert.training import WarmupSchedule, create_optimizer


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


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_weight_decay_skips_layer_norm_and_bias(name):
    inputs = keras.Input((4,))
    x = keras.layers.Dense(3, name="dense")(inputs)
    outputs = keras.layers.LayerNormalization(name="norm")(x)
    model = keras.Model(inputs, outputs)
    optimizer = create_optimizer(name, learning_rate=1e-3, total_steps=10, weight_decay=0.1)
    optimizer.build(model.trainable_variables)
    decayed = {v.path for v in model.trainable_variables if optimizer._use_weight_decay(v)}
    assert decayed == {"dense/kernel"}
    assert isinstance(optimizer, keras.optimizers.AdamW if name == "adamw" else keras.optimizers.Lamb)


def test_no_weight_decay():
    optimizer = create_optimizer(weight_decay=0, total_steps=10)
    assert not optimizer.weight_decay


def test_gradient_accumulation_and_clipping():
    optimizer = create_optimizer(gradient_accumulation_steps=4, clipnorm=0.5, total_steps=10)
    assert optimizer.gradient_accumulation_steps == 4
    assert optimizer.global_clipnorm == 0.5
