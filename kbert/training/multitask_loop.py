"""The multi-task model and its training loop: one backbone, a task model per head, one train
step per sampled task.

Why a step per task, not one model with every head's outputs: each task keeps its own batches
as its single-task run makes them (its features, its labels and sample weights, its lengths
grouped into buckets: static shapes per task), and a step computes one head and the backbone,
not every head on inputs it has no labels for. tensorflow/models' multitask trainer does the
same (`MultiTaskBaseTrainer`: a sampled task's `train_step` per step). Each head's task model
is compiled with its own loss (times its loss weight) and metrics and the one shared
optimizer, whose slots are built for every variable; a step runs that model's Keras
`train_step` in a `tf.function` of its own (traced per bucket shape, like `fit`'s).

The loop calls the Keras callbacks as `fit` does (train, epoch and batch begin and end), on a
`MultiTaskModel`: `Checkpoints` saves and restores its variables (backbone and every head)
and the optimizer's, `Evaluation` keeps the best epoch's, `GradualUnfreezing` freezes the
shared backbone (the heads are above its layers) and rebuilds the step functions.
"""

import functools

import keras
import numpy as np
import tensorflow as tf


class MultiTaskModel(keras.Model):
    """The heads of a multi-task run over their shared backbone, for the callbacks.

    Args:
        heads: {name: task model}, each built on `backbone` (the same object: its weights
            are shared) and compiled with `optimizer`.
        backbone: the shared backbone.
        optimizer: the optimizer every head is compiled with.
        jit_compile: compile each head's step with XLA.
    """

    def __init__(self, heads, backbone, optimizer, jit_compile=False, **kwargs):
        super().__init__(**kwargs)
        for name, model in heads.items():
            if model.backbone is not backbone:
                raise ValueError(f"Head {name!r} is not built on the shared backbone.")
            if model.optimizer is not optimizer:
                raise ValueError(f"Head {name!r} is not compiled with the shared optimizer.")
        self.backbone = backbone
        self.heads = dict(heads)
        self.optimizer = optimizer
        self.step_jit_compile = jit_compile
        self.train_function = None

    def make_train_function(self, force=False):
        """{head: its train step function}; `force` traces them again (after the trainable
        variables changed)."""
        if self.train_function is not None and not force:
            return self.train_function
        self.train_function = {
            name: tf.function(functools.partial(_train_step, model), reduce_retracing=True,
                              jit_compile=self.step_jit_compile)
            for name, model in self.heads.items()}
        return self.train_function


def _train_step(model, data):
    return model.train_step(data)


def _numbers(logs):
    return {name: float(np.asarray(value)) for name, value in logs.items()}


def train(model, sequence, iterators, epochs, steps_per_epoch, initial_epoch=0,
          callbacks=(), verbose=1):
    """Trains `model` (a `MultiTaskModel`) from `initial_epoch` to `epochs`: step s (counted
    from the run's start) is a step of head `sequence[s]` (an index into `model.heads`) on
    the next batch of its iterator in `iterators` ({name: iterator}).

    Logs: per step `loss` (the head's mean loss this epoch) and `head`'s index; per epoch
    `<head>_<metric>` of each head that trained (its compiled loss and metrics) and `loss`,
    their losses' mean, before the callbacks add theirs. Returns the `keras.callbacks.History`.
    """
    names = list(model.heads)
    if len(sequence) < epochs * steps_per_epoch:
        raise ValueError(f"The task sequence has {len(sequence)} steps, fewer than "
                         f"{epochs} epochs of {steps_per_epoch}.")
    history = keras.callbacks.History()
    callback_list = keras.callbacks.CallbackList(
        [*callbacks, history], add_progbar=verbose != 0, model=model, verbose=verbose,
        epochs=epochs, steps=steps_per_epoch)
    model.make_train_function()
    model.stop_training = False
    callback_list.on_train_begin()
    for epoch in range(initial_epoch, epochs):
        for head in model.heads.values():
            head.reset_metrics()
        trained = set()
        callback_list.on_epoch_begin(epoch)
        for batch in range(steps_per_epoch):
            callback_list.on_train_batch_begin(batch)
            index = int(sequence[epoch * steps_per_epoch + batch])
            name = names[index]
            # Looked up every step: a callback may have traced the steps again.
            logs = _numbers(model.train_function[name](next(iterators[name])))
            trained.add(name)
            callback_list.on_train_batch_end(batch, {"loss": logs["loss"], "head": index})
            if model.stop_training:
                break
        epoch_logs = {f"{name}_{key}": value for name in names if name in trained
                      for key, value in _numbers(model.heads[name].get_metrics_result()).items()}
        losses = [epoch_logs[f"{name}_loss"] for name in names if name in trained]
        epoch_logs["loss"] = float(np.mean(losses)) if losses else 0.0
        callback_list.on_epoch_end(epoch, epoch_logs)
        if model.stop_training:
            break
    callback_list.on_train_end()
    return history


def mean_score(scores, metrics, percentages=()):
    """The mean of the heads' metrics: `scores` {head: {metric: value}}, `metrics` {head: the
    metric that picks its best epoch}; heads in `percentages` score in percent (SQuAD's
    script) and count as fractions."""
    values = [scores[name][metric] / (100.0 if name in percentages else 1.0)
              for name, metric in metrics.items()]
    return float(np.mean(values))


def combined_scores(scores, metrics, percentages=()):
    """{head: {metric: value}} -> the flat scores of `Evaluation`: `<head>/<metric>` for every
    head's metrics, and `mean` (`mean_score`)."""
    flat = {f"{name}/{metric}": value for name, values in scores.items()
            for metric, value in values.items()}
    flat["mean"] = mean_score(scores, metrics, percentages)
    return flat
