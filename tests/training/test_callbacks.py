"""The pretraining loop's callbacks on a tiny model: checkpoints (save, restore, fall back,
keep, restore from another directory), the loop logs, the NaN guard and the step times."""

import os
import types

import keras
import numpy as np
import pytest

from kbert.training import WarmupSchedule
from kbert.training.callbacks import Checkpoints, LoopLogs, NanGuard, StepTimes

RNG = np.random.default_rng(0)
X = RNG.normal(size=(8, 4)).astype("float32")
Y = RNG.normal(size=(8, 1)).astype("float32")


def make_model(learning_rate=0.05):
    """A compiled two-layer model whose optimizer is built, as the pretraining run makes it."""
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate), loss="mse")
    model.optimizer.build(model.trainable_variables)
    return model


def state(model):
    """The model's and the optimizer's variables (step, Adam's moments) as numpy."""
    return [keras.ops.convert_to_numpy(v).copy()
            for v in list(model.variables) + list(model.optimizer.variables)]


def assert_same_state(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def train(model, checkpoints, loops, first_loop=0, steps_per_loop=2, callbacks=(), x=X):
    model.fit(x, Y, batch_size=len(x) // steps_per_loop, epochs=first_loop + loops,
              initial_epoch=first_loop, shuffle=False, verbose=0,
              callbacks=[*callbacks, checkpoints])


def test_saves_every_loop_named_by_step_and_restores_model_and_optimizer(tmp_path, capsys):
    model = make_model()
    checkpoints = Checkpoints(model, str(tmp_path), steps_per_loop=2)
    assert checkpoints.latest is None
    assert checkpoints.restore() == 0  # nothing yet: a fresh run
    train(model, checkpoints, loops=2)
    assert checkpoints.latest == str(tmp_path / "ckpt-4")
    assert [os.path.basename(p) for p in checkpoints.manager.checkpoints] == ["ckpt-2", "ckpt-4"]
    saved = state(model)
    assert int(model.optimizer.iterations) == 4

    again = make_model()
    assert not np.array_equal(state(again)[0], saved[0])  # other random weights
    assert Checkpoints(again, str(tmp_path), steps_per_loop=2).restore() == 4
    assert_same_state(state(again), saved)  # weights, step and Adam's moments
    assert "Resuming from" in capsys.readouterr().out


def test_keeps_the_newest_max_to_keep(tmp_path):
    model = make_model()
    checkpoints = Checkpoints(model, str(tmp_path), steps_per_loop=2, max_to_keep=2)
    train(model, checkpoints, loops=4)
    assert [os.path.basename(p) for p in checkpoints.manager.checkpoints] == ["ckpt-6", "ckpt-8"]
    assert not any(name.startswith("ckpt-2.") for name in os.listdir(tmp_path))


def corrupt(prefix):
    """Truncates every data shard of the checkpoint `prefix`, as an interrupted copy would."""
    shards = [f for f in os.listdir(os.path.dirname(prefix))
              if f.startswith(os.path.basename(prefix) + ".data-")]
    assert shards
    for shard in shards:
        path = os.path.join(os.path.dirname(prefix), shard)
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 3)


def test_falls_back_to_the_newest_readable_checkpoint(tmp_path, capsys):
    model = make_model()
    checkpoints = Checkpoints(model, str(tmp_path), steps_per_loop=2)
    train(model, checkpoints, loops=1)
    at_step_2 = state(model)
    train(model, checkpoints, loops=1, first_loop=1)
    corrupt(checkpoints.latest)  # ckpt-4

    again = make_model()
    assert Checkpoints(again, str(tmp_path), steps_per_loop=2).restore() == 2
    assert_same_state(state(again), at_step_2)
    out = capsys.readouterr().out
    assert "ckpt-4 is unreadable; falling back to the previous one." in out
    assert "Resuming from" in out and "(step 2)" in out

    corrupt(str(tmp_path / "ckpt-2"))  # none readable: start afresh
    fresh = make_model()
    before = state(fresh)
    assert Checkpoints(fresh, str(tmp_path), steps_per_loop=2).restore() == 0
    np.testing.assert_array_equal(state(fresh)[0], before[0])


def test_restore_from_another_directory(tmp_path):
    """A MultiWorkerMirrored worker saves in its own directory and restores the chief's."""
    chief = make_model()
    chief_checkpoints = Checkpoints(chief, str(tmp_path / "chief"), steps_per_loop=2)
    train(chief, chief_checkpoints, loops=1)

    worker = make_model()
    worker_checkpoints = Checkpoints(worker, str(tmp_path / "worker"), steps_per_loop=2,
                                     restore_from=str(tmp_path / "chief"))
    assert worker_checkpoints.restore() == 2
    assert_same_state(state(worker), state(chief))
    train(worker, worker_checkpoints, loops=1, first_loop=1)
    assert worker_checkpoints.latest == str(tmp_path / "worker" / "ckpt-4")
    assert chief_checkpoints.manager.checkpoints == [str(tmp_path / "chief" / "ckpt-2")]


def test_loop_logs_throughput_and_learning_rate(monkeypatch):
    model = make_model()
    logs = LoopLogs(global_batch_size=32, steps_per_loop=4)
    logs.set_model(model)
    clock = iter([10.0, 12.5])  # a loop of 2.5 s
    monkeypatch.setattr("kbert.training.callbacks.time",
                        types.SimpleNamespace(perf_counter=lambda: next(clock)))
    epoch_logs = {"loss": 1.0}
    logs.on_epoch_begin(0)
    logs.on_epoch_end(0, epoch_logs)
    assert epoch_logs["sequences_per_second"] == pytest.approx(32 * 4 / 2.5)
    assert epoch_logs["learning_rate"] == pytest.approx(0.05)  # a float rate: as is
    assert epoch_logs["loss"] == 1.0


def test_loop_logs_follow_the_schedule_in_fit():
    """Each loop logs the rate the schedule gives at the step reached (warm-up: step / 10)."""
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(WarmupSchedule(1e-2, 10, 100)), loss="mse")
    history = model.fit(X, Y, batch_size=4, epochs=3, shuffle=False, verbose=0,
                        callbacks=[LoopLogs(global_batch_size=4, steps_per_loop=2)]).history
    np.testing.assert_allclose(history["learning_rate"], [2e-3, 4e-3, 6e-3], rtol=1e-6)
    assert all(rate > 0 for rate in history["sequences_per_second"])
    assert len(history["loss"]) == 3


def test_step_times_count_the_slow_calls_apart(monkeypatch):
    """Calls over 5x the median are the compiles; what fit spends between calls is apart."""
    # fit starts at 0; calls of 8 s (a compile), 0.2, 0.3, 0.2 s, 3 s (a second shape's
    # compile); an epoch end of 1 s between the third and fourth; fit ends at 14 s.
    clock = iter([0.0, 0.0, 8.0, 8.0, 8.2, 8.2, 8.5, 9.5, 9.7, 9.7, 12.7, 14.0])
    monkeypatch.setattr("kbert.training.callbacks.time",
                        types.SimpleNamespace(perf_counter=lambda: next(clock)))
    times = StepTimes()
    assert times.summary() is None
    times.on_train_begin()
    for step in range(5):
        times.on_train_batch_begin(step)
        times.on_train_batch_end(step)
    times.on_train_end()
    summary = times.summary()
    assert summary == pytest.approx({
        "fit_seconds": 14.0, "calls": 5, "slow_calls": 2, "slow_seconds": 11.0,
        "steady_seconds": 0.7, "steady_call_seconds": 0.7 / 3, "between_seconds": 2.3})
    assert "2 of them over 5x the median call" in StepTimes.describe(summary)


def test_step_times_in_fit():
    model = make_model()
    times = StepTimes()
    model.fit(X, Y, batch_size=4, epochs=2, verbose=0, callbacks=[times])
    summary = times.summary()
    assert summary["calls"] == 4  # 8 examples in batches of 4, 2 epochs
    assert 0 < summary["slow_seconds"] + summary["steady_seconds"] <= summary["fit_seconds"]


@pytest.mark.parametrize("loss", [float("nan"), float("inf"), np.float32("-inf")])
def test_nan_guard_stops_on_a_non_finite_loss(tmp_path, loss):
    model = make_model()
    guard = NanGuard(Checkpoints(model, str(tmp_path), steps_per_loop=2))
    guard.on_train_batch_end(0, {"loss": 1.5})  # finite: nothing happens
    guard.on_train_batch_end(0, {})
    with pytest.raises(FloatingPointError, match=r"in step 5 of this loop.*checkpoint is none yet"):
        guard.on_train_batch_end(4, {"loss": loss})


def test_nan_guard_in_fit_keeps_the_last_good_checkpoint(tmp_path):
    model = make_model()
    checkpoints = Checkpoints(model, str(tmp_path), steps_per_loop=2)
    guard = NanGuard(checkpoints)
    train(model, checkpoints, loops=1, callbacks=[guard])
    bad = X.copy()
    bad[5] = np.nan  # the second batch of the next loop
    with pytest.raises(FloatingPointError, match=r"in step 2 of this loop.*ckpt-2"):
        train(model, checkpoints, loops=1, first_loop=1, callbacks=[guard], x=bad)
    # The loop with the NaN saved nothing.
    assert [os.path.basename(p) for p in checkpoints.manager.checkpoints] == ["ckpt-2"]
    assert not any(name.startswith("ckpt-4") for name in os.listdir(tmp_path))
