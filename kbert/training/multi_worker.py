"""What a run does differently under tf.distribute: checks, worker directories, Keras patches."""

import os

import tensorflow as tf

from kbert.training.config_fields import ConfigError


def check(config, strategy):
    """Refuses settings that the strategy's replicas cannot run, with the reason."""
    replicas = strategy.num_replicas_in_sync
    if config.global_batch_size % replicas:
        raise ConfigError(
            f"--global_batch_size={config.global_batch_size} is not divisible by the "
            f"{replicas} replicas of --strategy={config.strategy}."
        )
    if replicas > 1 and config.gradient_accumulation_steps > 1:
        raise ConfigError(
            f"--gradient_accumulation_steps={config.gradient_accumulation_steps} cannot run "
            f"with the {replicas} replicas of --strategy={config.strategy}: Keras's gradient "
            "accumulation syncs the replicas inside a conditional, which tf.distribute refuses "
            "(keras-team/keras#20582). Use --gradient_accumulation_steps=1 and a larger "
            "--global_batch_size."
        )
    if (config.strategy in ("mirrored", "multi_worker") and config.jit_compile
            and not tf.config.list_logical_devices("GPU")):
        why = ("XLA cannot run a replica's step on one CPU device with variables on another"
               if config.strategy == "mirrored" else
               "XLA on CPU has no kernels for the collective ops that sync the workers")
        raise ConfigError(f"--strategy={config.strategy} over CPU devices needs "
                          f"--nojit_compile: {why}.")


def worker_dir(strategy, model_dir):
    """`model_dir` on the chief (or the only worker); model_dir/workers/TYPE_ID elsewhere.

    Under MultiWorkerMirrored every worker saves (saving may sync them), but only the chief
    writes to model_dir and export_dir; the others write under model_dir/workers/.
    """
    if getattr(strategy.extended, "should_checkpoint", True):
        return model_dir
    resolver = strategy.cluster_resolver
    return os.path.join(model_dir, "workers", f"{resolver.task_type}_{resolver.task_id}")


def shard_by_data(stream):
    """Workers of MultiWorkerMirrored each build the whole stream and keep their rows of
    every global batch (the Python-built pairs cannot be split by file)."""
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return stream.with_options(options)


def patch_keras(model, strategy):
    """Works around two places where Keras 3's fit() fails under MultiWorkerMirrored.

    (tensorflow/tensorflow#72388.) 1. Before training, fit() reduces a first input batch
    across the workers only to build the model symbolically, and that reduce fails on a dict
    of inputs; the model and its optimizer are built already, so the build is skipped
    (`Model._maybe_symbolic_build`, a private Keras method: see the README's "Keras limits").
    2. The step's scalar logs are averaged across workers with `reduce("MEAN", axis=0)`, which
    fails on scalars; each log is given a length-1 axis, so that reduce averages the workers'
    values. Weights and gradients are untouched by both. Other strategies: nothing changes.
    """
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return
    from kbert import _keras_private

    _keras_private.skip_symbolic_build(model)
    train_step = model.train_step

    def train_step_with_vector_logs(data):
        logs = train_step(data)
        return {name: tf.reshape(value, [1]) for name, value in logs.items()}

    model.train_step = train_step_with_vector_logs
