"""`WarmupSchedule(decay="warmup_stable_decay")`: ModernBERT's trapezoid with a 1-sqrt decay."""

import keras
import numpy as np
import pytest

from kbert.training import WarmupSchedule, create_optimizer


def values(schedule, steps):
    return [float(keras.ops.convert_to_numpy(schedule(s))) for s in steps]


def test_warmup_then_the_peak_held_then_a_one_minus_sqrt_decay():
    schedule = WarmupSchedule(1e-3, warmup_steps=10, total_steps=110,
                              decay="warmup_stable_decay", decay_steps=40,
                              end_learning_rate=1e-5)
    got = values(schedule, [0, 5, 10, 40, 70, 80, 90, 110, 150])
    # Decay (1-sqrt) from step 70: at 80 a quarter done, so sqrt(0.25) = 0.5 of the way
    # down; at 90 half done, sqrt(0.5).
    peak, end = 1e-3, 1e-5
    expected = [0, 5e-4, peak, peak, peak, peak - (peak - end) * 0.5,
                peak - (peak - end) * np.sqrt(0.5), end, end]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-10)
    # Never above the peak, never rising after the warm-up.
    curve = values(schedule, range(10, 111))
    assert max(curve) <= peak * (1 + 1e-6) and all(np.diff(curve) <= 1e-12)


def test_the_default_decay_is_the_last_tenth_after_warmup_and_round_trips():
    schedule = WarmupSchedule(2e-3, 100, 1100, decay="warmup_stable_decay")
    assert schedule.decay_steps == 100
    assert values(schedule, [999, 1000])[0] == pytest.approx(2e-3)
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert values(again, [50, 1050]) == values(schedule, [50, 1050])
    optimizer = create_optimizer(learning_rate=2e-3, warmup_steps=100, total_steps=1100,
                                 decay="warmup_stable_decay", decay_steps=300)
    schedule_config = optimizer.get_config()["learning_rate"]["config"]
    assert (schedule_config["decay"], schedule_config["decay_steps"]) == (
        "warmup_stable_decay", 300)


@pytest.mark.parametrize("kwargs, message", [
    (dict(decay="linear", decay_steps=5),
     "decay_steps=5 sets warmup_stable_decay's final decay; decay='linear' has none"),
    (dict(decay="warmup_stable_decay", decay_steps=95),
     r"decay_steps=95: the final decay must be an integer in \[1, total_steps - "
     r"warmup_steps = 90\]"),
    (dict(decay="warmup_stable_decay", decay_steps=0), r"decay_steps=0: the final decay"),
])
def test_errors_name_the_bad_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WarmupSchedule(1e-3, 10, 100, **kwargs)
