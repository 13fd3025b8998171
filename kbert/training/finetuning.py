"""The fine-tuning run behind tools/finetune.py: `run_finetuning(FinetuningConfig(...))`.

In order: check the config, pick the strategy, take the pretrained encoder and its tokenizer
(a preset's release, any checkpoint kbert reads, or a tools/pretrain.py run), read and encode
the task's data, build the task model and its optimizer (layer-wise decay, a frozen backbone
or gradual unfreezing), resume from the newest checkpoint, train for `epochs` with the task's
official metrics on the validation split after each, keep the best epoch, save and export.
What a task is lives in `finetuning_tasks`; what tf.distribute changes in `multi_worker`.
"""

import dataclasses
import json
import math
import os

import keras
import tensorflow as tf

from kbert.tasks import registry
from kbert.training import callbacks as kbert_callbacks
from kbert.training import layer_wise, multi_worker
from kbert.training.finetuning_config import FinetuningConfig  # noqa: F401 - public name
from kbert.training.finetuning_tasks import FINETUNING_TASKS, validation_spec
from kbert.training.config_fields import ConfigError
from kbert.training.encoders import PretrainedEncoder, encoder_source  # noqa: F401 - public
from kbert.training.multitask import run_multitask
from kbert.training.strategies import create_strategy


def _rows(prepared):
    """Training rows: windows (QA), encoded sentences (tagging) or texts."""
    return len(next(iter(prepared.encoded.features.values())))


def run_finetuning(config):
    """Fine-tunes, checkpointing every epoch and resuming from `model_dir` when it has a
    checkpoint. Returns {"best": {"epoch", "scores"} or None, "logs": the last epoch's logs,
    "step_times": where fit's time went (`callbacks.StepTimes.summary`; None without a fit)}.
    With `config.multitask`: `kbert.training.multitask.run_multitask`'s run.
    """
    config.validate()
    if config.multitask:
        return run_multitask(config)
    task = FINETUNING_TASKS[config.task]
    keras.utils.set_random_seed(config.seed)
    strategy = create_strategy(config.strategy, config.tpu)
    multi_worker.check(config, strategy)
    work_dir = multi_worker.worker_dir(strategy, config.model_dir)
    tf.io.gfile.makedirs(work_dir)
    with tf.io.gfile.GFile(os.path.join(work_dir, "config.json"), "w") as f:
        json.dump(dataclasses.asdict(config), f, indent=2)

    encoder = encoder_source(config)
    print(f"Encoder: {encoder.description}.")
    if config.sequence_length > encoder.max_sequence_length:
        raise ConfigError(f"--sequence_length={config.sequence_length} is longer than the "
                          f"encoder's max_sequence_length={encoder.max_sequence_length}.")
    tokenizer = encoder.tokenizer
    train = task.prepare(config, config.train_data, "train", tokenizer)
    spec = validation_spec(config)
    validation = spec and task.prepare(config, spec, "validation", tokenizer,
                                       label_names=train.label_names)
    steps_per_epoch = _rows(train) // config.global_batch_size
    if steps_per_epoch == 0:
        raise ConfigError(f"--train_data={config.train_data!r} has {_rows(train)} training "
                          f"rows, fewer than one batch of --global_batch_size="
                          f"{config.global_batch_size}.")
    total_steps = steps_per_epoch * config.epochs
    warmup_steps = math.floor(total_steps * config.warmup_proportion)

    with strategy.scope():
        model = task.build(config, encoder.backbone(config.dtype()), train)
        fitted = model  # what fit trains: the model, or a distiller of it (--prune_distil)
        if config.pruning:
            if config.prune_distil and getattr(model, "problem_type", None) != "single_label":
                raise ConfigError(f"--prune_distil matches a single-label classifier's "
                                  f"classes; this run's model is a "
                                  f"{getattr(model, 'problem_type', type(model).__name__)} "
                                  f"one (regression data).")
            model, unpruned = _pruned(config, task, model, train, tokenizer, work_dir)
            fitted = _distiller(config, model, unpruned) if config.prune_distil else model
            del unpruned  # held by the distiller only, when there is one
        if config.lora_rank:
            trainable = model.backbone.enable_lora(config.lora_rank)
            print(f"LoRA of rank {config.lora_rank}: {trainable:,} trainable parameters in "
                  f"the backbone of {model.backbone.count_params():,}.")
        multipliers = None
        if config.layer_decay < 1:
            multipliers = layer_wise.learning_rate_multipliers(model, config.layer_decay)
        fitted.compile(
            optimizer=config.create_optimizer(total_steps, warmup_steps, multipliers),
            jit_compile=config.jit_compile, steps_per_execution=config.steps_per_execution)
        # Every variable gets its optimizer slots now, so that unfreezing needs no rebuild.
        fitted.optimizer.build(model.trainable_variables)
        if config.freeze_backbone:
            layer_wise.set_trainable_layers(model, 0)
        checkpoints = kbert_callbacks.Checkpoints(
            fitted, os.path.join(work_dir, "checkpoints"), steps_per_epoch,
            max_to_keep=2 if work_dir == config.model_dir else 1,
            restore_from=os.path.join(config.model_dir, "checkpoints"), kept=model)
        start_step = checkpoints.restore()

    evaluation = None
    step_times = kbert_callbacks.StepTimes()  # after NanGuard, which waits for each loss
    callbacks = [kbert_callbacks.LoopLogs(config.global_batch_size, steps_per_epoch),
                 kbert_callbacks.NanGuard(checkpoints), step_times]
    if validation:
        evaluation = kbert_callbacks.Evaluation(
            lambda: task.scores(config, model, validation, tokenizer),
            task.metric(config, train),
            os.path.join(work_dir, "best") if config.keep_best else None, kept=model)
        callbacks.append(evaluation)
    if config.unfreeze_every:
        callbacks.append(layer_wise.GradualUnfreezing(config.unfreeze_every,
                                                      config.unfreeze_unit))
    callbacks += [checkpoints, keras.callbacks.TensorBoard(os.path.join(work_dir, "logs"))]

    logs = {}
    if start_step >= total_steps:
        print(f"Already trained {start_step} of {total_steps} steps.")
    else:
        # The stream is the same from every iterator: skipping the steps done restores its
        # position after a restart.
        stream = task.training_stream(config, model, train, tokenizer).skip(start_step)
        multi_worker.patch_keras(fitted, strategy)
        history = fitted.fit(multi_worker.shard_by_data(stream), epochs=config.epochs,
                            initial_epoch=start_step // steps_per_epoch,
                            steps_per_epoch=steps_per_epoch, verbose=config.verbose,
                            callbacks=callbacks)
        logs = {k: v[-1] for k, v in history.history.items()}
    times = step_times.summary()
    if times:
        print(f"Training: {kbert_callbacks.StepTimes.describe(times)}.")
    best = evaluation and evaluation.finish(model, restore=config.keep_best)
    del fitted  # (a distiller holds the unpruned model)
    exits = None
    if config.exit_heads:
        with strategy.scope():
            model, exits = _with_exits(config, task, model, train, validation, tokenizer,
                                       steps_per_epoch)
    if work_dir == config.model_dir:
        _save(model, tokenizer, config, train, exits)
    return {"best": best, "logs": logs, "step_times": times,
            **({"early_exit": exits} if exits else {})}


def _with_exits(config, task, model, train, validation, tokenizer, steps_per_epoch):
    """--exit_heads: the fine-tuned `model` with exit heads trained on the training stream and
    the entropy threshold chosen on the validation split (`kbert.training.early_exit`).
    Returns (the EarlyExitClassifier, what early_exit.json records)."""
    from kbert.training import early_exit

    exits = early_exit.add_exits(model)
    epochs = config.exit_epochs or early_exit.DEFAULTS[config.exit_joint]["epochs"]
    print(f"Training exit heads after layers {exits.exit_layers} for {epochs} epoch(s)"
          f"{' with the model' if config.exit_joint else ', the model frozen'}.")
    stream = task.training_stream(config, exits, train, tokenizer)
    # Joint: the shuffled stream's next `epochs` epochs; frozen: one pass of it computes what
    # the heads read, and they train `epochs` times on that.
    passes = epochs if config.exit_joint else 1
    early_exit.train_exits(exits, stream.take(steps_per_epoch * passes),
                           epochs=1 if config.exit_joint else epochs,
                           batch_size=config.global_batch_size,
                           learning_rate=config.exit_learning_rate, joint=config.exit_joint,
                           verbose=config.verbose)
    choice = early_exit.choose(exits, validation.encoded.features,
                               validation.encoded.labels["labels"],
                               max_drop=config.exit_max_drop,
                               batch_size=config.global_batch_size)
    print(f"Early exit: {choice.setting} runs {choice.mean_layers:.2f} of "
          f"{choice.num_layers} layers on average on the validation data, accuracy "
          f"{choice.accuracy:.4f} (the full model's: {choice.full_accuracy:.4f}).")
    return exits, {"setting": choice.setting, "accuracy": choice.accuracy,
                   "full_accuracy": choice.full_accuracy, "mean_layers": choice.mean_layers,
                   "num_layers": choice.num_layers, "exit_layers": exits.exit_layers,
                   "curve": choice.curve}


def _pruned(config, task, fresh, train, tokenizer, work_dir):
    """--prune_heads / --prune_units / --prune_layers: `fresh` (this run's model) with the
    weights of the fine-tuned model of --checkpoint (of its class, head and labels), less the
    heads, units and layers whose removal changes its loss on the training data least
    (`kbert.training.pruning`).
    What is removed is written to work_dir/pruning.json, which a resumed run reads instead
    of ranking again."""
    from kbert import loading
    from kbert.models import pruning as backbone_pruning
    from kbert.training import pruning

    held = loading.source(config.checkpoint).build(dtype=config.dtype())
    labels = [getattr(m, "label_names", None) for m in (held, fresh)]
    if type(held) is not type(fresh) or labels[0] != labels[1]:
        raise ConfigError(f"--prune_heads / --prune_units / --prune_layers prune a "
                          f"fine-tuned {config.task} "
                          f"of this data's labels; --checkpoint={config.checkpoint} holds a "
                          f"{type(held).__name__}"
                          + (f" of other labels ({labels[0]}; the data's: {labels[1]})"
                             if type(held) is type(fresh) else "") + ".")
    differ = next(((h.path, tuple(h.shape), tuple(f.shape)) for h, f in zip(
        held.weights, fresh.weights) if tuple(h.shape) != tuple(f.shape)), None)
    if differ is not None or len(held.weights) != len(fresh.weights):
        raise ConfigError(f"--checkpoint={config.checkpoint}'s {type(held).__name__} is not "
                          f"the model this run builds (--config_override, the task's flags): "
                          + (f"{differ[0]} is {differ[1]} there, {differ[2]} here."
                             if differ else "its weights differ in number."))
    # The run's own model (its dropouts, task settings), with the fine-tuned weights.
    fresh.set_weights(held.get_weights())
    del held
    record = os.path.join(work_dir, "pruning.json")
    settings = {"checkpoint": config.checkpoint, "prune_heads": config.prune_heads,
                "prune_units": config.prune_units,
                **({"prune_layers": config.prune_layers} if config.prune_layers else {})}
    if tf.io.gfile.exists(record):
        with tf.io.gfile.GFile(record) as f:
            removal = json.load(f)
        if removal.get("settings") != settings:
            raise ConfigError(f"{record} is the removal of another pruning "
                              f"({removal.get('settings')}); this run's is {settings}. Give "
                              f"another --model_dir.")
        heads, units = ({int(k): v for k, v in removal[name].items()}
                        for name in ("heads", "units"))
        layers = removal.get("layers", [])
        print(f"Pruning as {record} says (a resumed run).")
    else:
        heads, units, layers = _ranked(config, task, fresh, train, tokenizer)
        with tf.io.gfile.GFile(record, "w") as f:
            json.dump({"settings": settings, "heads": heads, "units": units,
                       "layers": layers}, f)
    smaller = pruning.prune(fresh, heads=heads, units=units, layers=layers)
    (heads_before, units_before), (heads_after, units_after) = (
        backbone_pruning.structure(m.backbone) for m in (fresh, smaller))
    print(f"Pruned: {'layers ' + str(layers) + ' removed; ' if layers else ''}heads per "
          f"layer {heads_before} -> {heads_after}, feed-forward units {units_before} -> "
          f"{units_after}; {fresh.count_params():,} -> {smaller.count_params():,} parameters.")
    return smaller, fresh


def _ranked(config, task, model, train, tokenizer):
    """What --prune_heads / --prune_units / --prune_layers remove from `model`, ranked on
    --prune_batches training batches: (heads, units, layers) as `pruning.prune` takes them
    (the heads and units of a removed layer go with it)."""
    from kbert.models import pruning as backbone_pruning
    from kbert.training import pruning

    model.compile()
    stream = task.training_stream(config, model, train, tokenizer)
    heads, units, layers = {}, {}, []
    progress = config.verbose == 1
    if config.prune_layers:
        count = model.backbone.config.num_layers
        if config.prune_layers >= count:
            raise ConfigError(f"--prune_layers={config.prune_layers}: {config.checkpoint} has "
                              f"{count} layers; remove 1 to {count - 1} (one stays).")
        print(f"Ranking the {count} layers of {config.checkpoint} on {config.prune_batches} "
              f"training batches (the loss without each).")
        scores = pruning.layer_importance(model, stream, steps=config.prune_batches,
                                          progress=progress)
        layers = pruning.plan_layers(scores, config.prune_layers)
        print("The loss rises by " + ", ".join(f"{value:+.4f}" for value in scores)
              + f" without each layer: removing {layers}.")
    if config.prune_heads or config.prune_units:
        print(f"Ranking the heads and feed-forward units of {config.checkpoint} on "
              f"{config.prune_batches} training batches.")
        scores = pruning.importance(model, stream, steps=config.prune_batches,
                                    progress=progress)
        # The fractions are of the kept blocks' heads and units (a block is a layer, but
        # ALBERT's shared ones).
        kept = backbone_pruning.kept_blocks(model.backbone, layers)
        runs = scores.unit_runs
        heads, units = pruning.plan(
            pruning.Importance([scores.heads[i] for i in kept],
                               [scores.units[i] for i in kept], scores.batches,
                               runs and [runs[i] for i in kept]),
            config.prune_heads, config.prune_units)
        heads, units = ({kept[i]: v for i, v in part.items()} for part in (heads, units))
    return heads, units, layers


def _distiller(config, model, unpruned):
    """--prune_distil: a `TaskDistiller` that trains the pruned `model` on the labels and on
    the unpruned model's answers."""
    from kbert.training.task_distillation import TaskDistiller

    try:
        distiller = TaskDistiller(model, unpruned, temperature=config.prune_temperature,
                                  alpha=1.0 - config.prune_distil)
    except ValueError as e:
        raise ConfigError(f"--prune_distil: {e}") from None
    print(f"Recovering by distillation from the unpruned model: its answers weigh "
          f"{config.prune_distil}, the labels {1 - config.prune_distil:g}, temperature "
          f"{config.prune_temperature}.")
    return distiller


def _save(model, tokenizer, config, train, exits=None):
    """model_dir/model.keras (the fine-tuned model, `kbert.untrusted.load_model`) with the
    tokenizer's files beside it (and early_exit.json with --exit_heads), and the SavedModel
    in --export_dir."""
    from kbert.tokenizers.files import write_tokenizer_files

    path = os.path.join(config.model_dir, "model.keras")
    model.save(path)
    write_tokenizer_files(tokenizer, config.model_dir)
    print(f"Saved the fine-tuned model to {path}.")
    options = dict(FINETUNING_TASKS[config.task].export_options(config, train))
    if exits:
        with tf.io.gfile.GFile(os.path.join(config.model_dir, "early_exit.json"), "w") as f:
            json.dump(exits, f, indent=1)
        options["early_exit"] = exits["setting"]
    if config.export_dir:
        model.export(config.export_dir, tokenizer=tokenizer, **options)
        print(f"Exported a SavedModel (the {registry.get(config.task).pipelines[0]} "
              f"pipeline's answers) to {config.export_dir}.")
