"""The pretraining run behind tools/pretrain.py: `run_pretraining(PretrainingConfig(...))`.

What the run does, in order: check the config, pick the strategy, resolve the vocabulary (and
the teacher), build the objective's model and optimizer, resume from the newest checkpoint,
train in loops of `steps_per_loop` steps (a checkpoint after each), export. Each step that
has more to it lives in its own module: `objectives` (what is trained), `sources` (vocabulary
and batches), `multi_worker` (what tf.distribute changes), `distillation` (teachers).
"""

import dataclasses
import json
import os

import keras
import tensorflow as tf
from absl import logging

from kbert.tasks import registry
from kbert.training import callbacks as kbert_callbacks
from kbert.training import multi_worker, pretraining_inputs
from kbert.training.objectives import OBJECTIVES
from kbert.training.pretraining_config import PretrainingConfig  # noqa: F401 - public name
from kbert.training.config_fields import ConfigError  # noqa: F401 - public name
from kbert.training.strategies import create_strategy


def _resolve_lowercase(config, work_dir, teacher):
    """The config with the lower-casing the run uses: the teacher's (its vocabulary's), else
    --lowercase, else what an earlier start of this run recorded in config.json (a resumed
    run keeps its casing), else the preset's. A --lowercase that contradicts the teacher or
    the recorded run is refused, naming both."""
    if teacher is not None:
        if config.lowercase is not None and config.lowercase != teacher.lowercase:
            raise ConfigError(f"--lowercase={config.lowercase}: the teacher "
                              f"({teacher.description}) has lowercase={teacher.lowercase}; "
                              "the student tokenizes with the teacher's vocabulary.")
        return dataclasses.replace(config, lowercase=teacher.lowercase)
    path = os.path.join(work_dir, "config.json")
    recorded = None
    if tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path) as f:
            recorded = json.load(f).get("lowercase")
    if recorded is not None and config.lowercase is not None and config.lowercase != recorded:
        raise ConfigError(f"--lowercase={config.lowercase}: {path} records lowercase="
                          f"{recorded}, the casing its vocabulary and checkpoints were made "
                          "with; use a new --model_dir for another casing.")
    if config.lowercase is None and recorded is not None:
        return dataclasses.replace(config, lowercase=bool(recorded))
    return config


def run_pretraining(config, callbacks=()):
    """Pretrains, checkpointing every loop, resuming from `model_dir` when it has a checkpoint.

    `callbacks`: more Keras callbacks for `fit`, after the run's own (a loop is an epoch:
    `on_epoch_end` runs after each checkpoint). Returns the last loop's logs (loss,
    mlm_accuracy, ...).
    """
    config.validate()
    objective = OBJECTIVES[config.objective]
    keras.utils.set_random_seed(config.seed)
    strategy = create_strategy(config.strategy, config.tpu)
    multi_worker.check(config, strategy)
    teacher = None
    if objective.needs_teacher:
        from kbert.training.distillation import teacher_source

        teacher = teacher_source(config.teacher)
    work_dir = multi_worker.worker_dir(strategy, config.model_dir)
    tf.io.gfile.makedirs(work_dir)
    config = _resolve_lowercase(config, work_dir, teacher)
    with tf.io.gfile.GFile(os.path.join(work_dir, "config.json"), "w") as f:
        # What the run did: the lower-casing resolved from the preset when not given.
        json.dump({**dataclasses.asdict(config), "lowercase": config.resolved_lowercase}, f,
                  indent=2)
    tokenizer = pretraining_inputs.tokenizer(config, work_dir, teacher)
    train_steps = pretraining_inputs.train_steps(config, tokenizer)

    with strategy.scope():
        overrides = {"vocabulary_size": tokenizer.vocabulary_size, **config.config_overrides}
        model = objective.build(config, overrides, teacher)
        optimizer = config.create_optimizer(train_steps, config.warmup_steps)
        model.compile(optimizer=optimizer, jit_compile=config.jit_compile,
                      steps_per_execution=config.steps_per_execution)
        model.optimizer.build(model.trainable_variables)
        checkpoints = kbert_callbacks.Checkpoints(
            model, os.path.join(work_dir, "checkpoints"), config.steps_per_loop,
            max_to_keep=3 if work_dir == config.model_dir else 1,
            restore_from=os.path.join(config.model_dir, "checkpoints"),
        )
        start_step = checkpoints.restore()
        if start_step == 0 and config.init_checkpoint:
            _init_from(model, config.init_checkpoint)
        elif start_step == 0 and objective.initialize:
            objective.initialize(model, config)
    if start_step >= train_steps:
        print(f"Already trained {start_step} of {train_steps} steps.")
        logs = {}
    else:
        logs = _fit(model, config, objective, tokenizer, strategy, checkpoints, work_dir,
                    start_step, train_steps, list(callbacks))
    if config.export_dir:
        export_dir = config.export_dir
        if work_dir != config.model_dir:
            export_dir = os.path.join(work_dir, "export")
        export(objective.model_to_export(model), tokenizer, export_dir, objective.exported)
    return logs


def _fit(model, config, objective, tokenizer, strategy, checkpoints, work_dir, start_step,
         train_steps, callbacks):
    """Trains from `start_step` to `train_steps` in loops; returns the last loop's logs."""
    # The stream is the same from every iterator: skipping the steps done restores its
    # position. A step is one batch (Keras accumulates gradients inside the optimizer).
    stream = pretraining_inputs.dataset(config, tokenizer, repeat=True).skip(start_step)
    stream = multi_worker.shard_by_data(stream)
    # Only the features the model takes (DistilBERT has no segment_ids).
    names = set(getattr(model, "feature_names", None) or model.input)
    stream = stream.map(lambda x, y: ({k: v for k, v in x.items() if k in names}, y))
    multi_worker.patch_keras(model, strategy)
    history = model.fit(
        stream,
        epochs=train_steps // config.steps_per_loop,
        initial_epoch=start_step // config.steps_per_loop,
        steps_per_epoch=config.steps_per_loop,
        verbose=config.verbose,
        callbacks=[
            kbert_callbacks.LoopLogs(config.global_batch_size, config.steps_per_loop),
            kbert_callbacks.NanGuard(checkpoints),
            checkpoints,
            keras.callbacks.TensorBoard(os.path.join(work_dir, "logs")),
            *callbacks,
        ],
    )
    logs = {k: v[-1] for k, v in history.history.items()}
    summary = ", ".join(f"{k} {logs[k]:.4f}" for k in objective.metrics if k in logs)
    print(f"Final ({train_steps} steps): {summary}")
    return logs


def _init_from(model, model_dir):
    """Model weights (not the optimizer) from another run's newest checkpoint (phase 2)."""
    path = tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints")) or model_dir
    tf.train.Checkpoint(model=list(model.variables)).restore(path).expect_partial()
    print(f"Initialized the model from {path}.")


def export(model, tokenizer, export_dir, what="the model"):
    """`kbert.export` of what the run trained: a masked-LM pretrainer as the fill-mask
    pipeline, a backbone (ELECTRA's discriminator) as feature extraction; `serving_ids` of
    both returns the backbone's outputs."""
    import kbert  # the floor above (kbert.pipelines), reached through the package root

    task = registry.of_model(model).pipelines[0]
    kbert.export(kbert.pipeline(task, model=model, tokenizer=tokenizer), export_dir)
    print(f"Exported {what} as a SavedModel ({task} answers on text, serving_ids on token "
          f"ids) to {export_dir}.")
    logging.info("SavedModel written to %s", export_dir)
