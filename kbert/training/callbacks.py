"""Callbacks of the training loops: throughput, learning rate, step times, NaN guard,
checkpoints."""

import json
import math
import os
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging


class LoopLogs(keras.callbacks.Callback):
    """Adds `sequences_per_second` and `learning_rate` to each loop's logs (and TensorBoard)."""

    def __init__(self, global_batch_size, steps_per_loop):
        super().__init__()
        self.global_batch_size = global_batch_size
        self.steps_per_loop = steps_per_loop

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        seconds = time.perf_counter() - self._start
        logs["sequences_per_second"] = self.global_batch_size * self.steps_per_loop / seconds
        schedule = self.model.optimizer.learning_rate
        iterations = self.model.optimizer.iterations
        rate = schedule(iterations) if callable(schedule) else schedule
        logs["learning_rate"] = float(keras.ops.convert_to_numpy(rate))


class StepTimes(keras.callbacks.Callback):
    """Where a fit's time goes: each call of the train function timed (a step, or
    `steps_per_execution` of them), the calls over `SLOW` times the median counted apart as
    those that trace or XLA-compile the step for a new batch shape (a compile takes seconds,
    a step of a small model tenths: the threshold tells them apart, it does not watch the
    compiler), the rest steady. Put it after the callbacks that read a step's loss, so that
    a step's time includes its wait for the result. `summary()`: see there."""

    SLOW = 5

    def on_train_begin(self, logs=None):
        self._times, self._fit_start = [], time.perf_counter()

    def on_train_batch_begin(self, batch, logs=None):
        self._start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self._times.append(time.perf_counter() - self._start)

    def on_train_end(self, logs=None):
        self._fit_seconds = time.perf_counter() - self._fit_start

    def summary(self):
        """{"fit_seconds": the whole fit, "calls": train-function calls, "slow_calls" and
        "slow_seconds": those over SLOW x the median and their time, "steady_seconds" and
        "steady_call_seconds": the rest's time and mean, "between_seconds": the fit's time
        outside the calls (epoch ends: evaluation, checkpoints)}; None before a fit ends."""
        if not getattr(self, "_fit_seconds", None) or not self._times:
            return None
        times = np.asarray(self._times)
        slow = times > self.SLOW * np.median(times)
        steady = times[~slow]
        return {"fit_seconds": self._fit_seconds, "calls": int(times.size),
                "slow_calls": int(slow.sum()), "slow_seconds": float(times[slow].sum()),
                "steady_seconds": float(steady.sum()),
                "steady_call_seconds": float(steady.mean()) if steady.size else 0.0,
                "between_seconds": float(self._fit_seconds - times.sum())}

    @staticmethod
    def describe(summary):
        """One line of `summary()`'s numbers."""
        return (f"{summary['fit_seconds']:.1f} s in fit: {summary['calls']} train-function "
                f"calls, {summary['slow_calls']} of them over {StepTimes.SLOW}x the median "
                f"call (compiling or tracing for a new shape, most likely) "
                f"{summary['slow_seconds']:.1f} s, the steady rest "
                f"{summary['steady_seconds']:.1f} s "
                f"({summary['steady_call_seconds'] * 1000:.0f} ms a call); between calls "
                f"(evaluation, checkpoints, other callbacks) "
                f"{summary['between_seconds']:.1f} s")


class NanGuard(keras.callbacks.Callback):
    """Stops the run with an error when the loss is NaN or infinite (no checkpoint after it)."""

    def __init__(self, checkpoints):
        super().__init__()
        self.checkpoints = checkpoints

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(np.asarray(loss))):
            latest = self.checkpoints.latest or "none yet"
            raise FloatingPointError(
                f"The loss became {float(np.asarray(loss))} in step {batch + 1} of this loop. "
                f"The run stopped; the last good checkpoint is {latest}. Lower the learning "
                "rate, or check the data, and run the same command again to resume."
            )


class Checkpoints(keras.callbacks.Callback):
    """Saves model, optimizer and dropout-seed state every loop; restores the newest readable.

    A checkpoint is named by its global step. `restore()` falls back to older checkpoints
    when the newest cannot be read, and says so. `restore_from` (default: `directory`) is
    where restore() looks: a MultiWorkerMirrored worker saves in its own directory and
    restores from the chief's.
    """

    def __init__(self, model, directory, steps_per_loop, max_to_keep=3, restore_from=None,
                 kept=None):
        super().__init__()
        self.steps_per_loop = steps_per_loop
        # `kept`: the model whose weights are saved, where `model` (what fit trains, its
        # optimizer's) holds more (a distiller's frozen teacher).
        self.checkpoint = tf.train.Checkpoint(
            model=list((kept or model).variables), optimizer=list(model.optimizer.variables)
        )
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep)
        self.restore_manager = self.manager
        if restore_from is not None and os.path.normpath(restore_from) != os.path.normpath(
                directory):
            self.restore_manager = tf.train.CheckpointManager(self.checkpoint, restore_from,
                                                              max_to_keep)

    @property
    def latest(self):
        return self.manager.latest_checkpoint

    def restore(self):
        """Restores the newest readable checkpoint; returns its step (0 when none)."""
        for path in reversed(self.restore_manager.checkpoints):
            try:
                self.checkpoint.restore(path).assert_existing_objects_matched()
            except Exception as e:  # noqa: BLE001 - truncated files raise IndexError, OpError...
                logging.warning(
                    "Checkpoint %s cannot be read (%s: %s); trying the one before it.",
                    path, type(e).__name__, str(e).splitlines()[0][:200],
                )
                print(f"Checkpoint {path} is unreadable; falling back to the previous one.")
                continue
            step = int(path.rsplit("-", 1)[1])
            print(f"Resuming from {path} (step {step}).")
            return step
        return 0

    def on_epoch_end(self, epoch, logs=None):
        self.manager.save(checkpoint_number=(epoch + 1) * self.steps_per_loop)


class Evaluation(keras.callbacks.Callback):
    """Scores the model after every epoch and keeps the weights of the best one.

    `score()` -> {metric: value} (e.g. the task's official metrics on the validation split);
    they go into the epoch's logs as `val_<metric>` (progress bar, TensorBoard, history).
    When `metric` improves, the model's weights are written to `best_dir` with `best.json`
    (epoch and scores), which a resumed run reads back so that "best" spans restarts.
    Place it before `Checkpoints` so that a checkpoint's logs hold the scores.
    """

    def __init__(self, score, metric, best_dir=None, higher_is_better=True, kept=None):
        super().__init__()
        self.score, self.metric, self.best_dir = score, metric, best_dir
        self.kept = kept  # the model whose weights are kept (default: the one fit trains)
        self.sign = 1.0 if higher_is_better else -1.0
        self.best = None
        if best_dir and tf.io.gfile.exists(os.path.join(best_dir, "best.json")):
            with tf.io.gfile.GFile(os.path.join(best_dir, "best.json")) as f:
                self.best = json.load(f)

    def on_epoch_end(self, epoch, logs=None):
        scores = {name: float(value) for name, value in self.score().items()}
        if logs is not None:
            logs.update({f"val_{name}": value for name, value in scores.items()})
        print("\nValidation: " + ", ".join(f"{k} {v:.4f}" for k, v in scores.items()),
              flush=True)
        if self.metric not in scores:
            raise ValueError(f"The scores {sorted(scores)} have no {self.metric!r}.")
        if self.best is None or (self.sign * scores[self.metric]
                                 > self.sign * self.best["scores"][self.metric]):
            self.best = {"epoch": epoch + 1, "scores": scores}
            if self.best_dir:
                tf.train.Checkpoint(model=list((self.kept or self.model).variables)).write(
                    os.path.join(self.best_dir, "weights"))
                with tf.io.gfile.GFile(os.path.join(self.best_dir, "best.json"), "w") as f:
                    json.dump(self.best, f, indent=2)

    def finish(self, model, restore=True):
        """At the end of a run: `best`, printed, its weights loaded into `model` when
        `restore` (and kept in `best_dir`)."""
        best = self.restore_best(model) if restore else self.best
        if best:
            print(f"Best epoch {best['epoch']}: " + ", ".join(
                f"{k} {v:.4f}" for k, v in best["scores"].items()))
        return best

    def restore_best(self, model):
        """Loads the best epoch's weights into `model`; returns `best` (None if none)."""
        if self.best is not None and self.best_dir:
            tf.train.Checkpoint(model=list(model.variables)).read(
                os.path.join(self.best_dir, "weights")).assert_existing_objects_matched()
        return self.best
