"""A multi-task fine-tuning run: `run_multitask(FinetuningConfig(multitask={...}))` (what
`run_finetuning` runs when `--multitask` gives the heads).

One pretrained backbone, one task model per head built on it (the same backbone object: its
weights are shared), each head with its own data, loss weight and metrics (its task's
fine-tuning hooks, on the head's config: `multitask_config`). Each step trains one head, drawn
by `--sampling` (`task_sampling`: the whole sequence from the seed); an epoch is as many steps
as all the heads' batches of one pass over their data. After every epoch every head with
validation data is scored by its task's official metrics; the best epoch is the one with the
best mean of the heads' metrics, or of one head's (`--best_by`). Layer-wise decay and gradual
unfreezing act on the shared backbone; a run killed and started again resumes from its
newest checkpoint, on the same task sequence, each head's stream after the batches it took.

Saved: model_dir/NAME/model.keras with the tokenizer's files for each head (a directory
`kbert.load` and `kbert.pipeline` read); with --export_dir, each head's SavedModel in
export_dir/NAME (`model.export`: raw strings in, its pipeline's answers out).
"""

import dataclasses
import json
import math
import os

import keras
import tensorflow as tf

from kbert.training import callbacks as kbert_callbacks
from kbert.training import layer_wise, multitask_config, task_sampling
from kbert.training.config_fields import ConfigError
from kbert.training.encoders import encoder_source
from kbert.training.finetuning_tasks import FINETUNING_TASKS, validation_spec
from kbert.training.multitask_loop import MultiTaskModel, combined_scores, train

# The tasks whose official scores are percentages (the SQuAD script's): `--best_by=mean`
# counts them as fractions, beside accuracies and F1s in [0, 1].
PERCENTAGES = ("question_answerer",)


@dataclasses.dataclass
class PreparedHead:
    """A head with its task's hooks and its prepared splits."""

    name: str
    config: object
    loss_weight: float
    task: object  # a FinetuningTask
    train: object
    validation: object  # or None
    steps: int  # its batches in one pass over its training data


def prepare_heads(heads, tokenizer, max_sequence_length):
    """Each head's data read and encoded (`FinetuningTask.prepare`), with its steps."""
    prepared = []
    for head in heads:
        config, task = head.config, FINETUNING_TASKS[head.config.task]
        if config.sequence_length > max_sequence_length:
            raise ConfigError(f"--multitask head {head.name!r}: sequence_length="
                              f"{config.sequence_length} is longer than the encoder's "
                              f"max_sequence_length={max_sequence_length}.")
        train = task.prepare(config, config.train_data, "train", tokenizer)
        spec = validation_spec(config)
        validation = spec and task.prepare(config, spec, "validation", tokenizer,
                                           label_names=train.label_names)
        rows = len(next(iter(train.encoded.features.values())))
        steps = rows // config.global_batch_size
        if steps == 0:
            raise ConfigError(f"--multitask head {head.name!r}: train_data="
                              f"{config.train_data!r} has {rows} training rows, fewer than "
                              f"one batch of global_batch_size={config.global_batch_size}.")
        prepared.append(PreparedHead(head.name, config, head.loss_weight, task, train,
                                     validation or None, steps))
    return prepared


def _loss_weights(model, weight):
    """The head's loss weights: its task's defaults times the head's `loss_weight`."""
    _, defaults = model.default_loss()
    if defaults is None:
        return weight
    return {name: value * weight for name, value in defaults.items()}


def build_model(config, prepared, backbone, total_steps, warmup_steps):
    """The heads' task models on `backbone`, compiled with one optimizer (layer-wise decay
    where asked; slots for every variable, so that unfreezing needs no rebuild)."""
    models = {head.name: head.task.build(head.config, backbone, head.train)
              for head in prepared}
    multipliers = None
    if config.layer_decay < 1:  # the heads keep the base rate: above the backbone's layers
        multipliers = layer_wise.learning_rate_multipliers(backbone, config.layer_decay)
    optimizer = config.create_optimizer(total_steps, warmup_steps, multipliers)
    for head in prepared:
        models[head.name].compile(optimizer=optimizer,
                                  loss_weights=_loss_weights(models[head.name],
                                                             head.loss_weight),
                                  jit_compile=config.jit_compile)
    model = MultiTaskModel(models, backbone, optimizer, jit_compile=config.jit_compile)
    optimizer.build(model.trainable_variables)
    if config.freeze_backbone:
        layer_wise.set_trainable_layers(model, 0)
    return model


def evaluation_scores(prepared, model, tokenizer):
    """() -> the flat scores of every head with validation data (`combined_scores`)."""
    scored = [head for head in prepared if head.validation]
    metrics = {head.name: head.task.metric(head.config, head.train) for head in scored}
    percentages = {head.name for head in scored if head.config.task in PERCENTAGES}

    def score():
        scores = {head.name: head.task.scores(head.config, model.heads[head.name],
                                              head.validation, tokenizer)
                  for head in scored}
        return combined_scores(scores, metrics, percentages)

    return score, metrics


def run_multitask(config):
    """Fine-tunes every head of `config.multitask` on one backbone, checkpointing every epoch
    and resuming from `model_dir`. Returns {"best": {"epoch", "scores"} or None, "logs": the
    last epoch's logs, "sequence": the head index of every step}."""
    heads = multitask_config.validate(config)
    keras.utils.set_random_seed(config.seed)
    tf.io.gfile.makedirs(config.model_dir)
    with tf.io.gfile.GFile(os.path.join(config.model_dir, "config.json"), "w") as f:
        json.dump(dataclasses.asdict(config), f, indent=2)
    encoder = encoder_source(config)
    print(f"Encoder: {encoder.description}.")
    tokenizer = encoder.tokenizer
    prepared = prepare_heads(heads, tokenizer, encoder.max_sequence_length)
    steps_per_epoch = sum(head.steps for head in prepared)
    total_steps = steps_per_epoch * config.epochs
    sequence = task_sampling.task_sequence(
        [head.steps for head in prepared], config.sampling, total_steps, config.seed,
        config.sampling_temperature)
    print("Heads: " + ", ".join(
        f"{head.name} ({head.config.task}, {head.steps} batches, p "
        f"{p:.3f})" for head, p in zip(prepared, task_sampling.probabilities(
            [h.steps for h in prepared], config.sampling, config.sampling_temperature))))

    model = build_model(config, prepared, encoder.backbone(config.dtype()), total_steps,
                        math.floor(total_steps * config.warmup_proportion))
    checkpoints = kbert_callbacks.Checkpoints(
        model, os.path.join(config.model_dir, "checkpoints"), steps_per_epoch, max_to_keep=2)
    start_step = checkpoints.restore()

    callbacks = [kbert_callbacks.LoopLogs(config.global_batch_size, steps_per_epoch),
                 kbert_callbacks.NanGuard(checkpoints)]
    evaluation = None
    score, metrics = evaluation_scores(prepared, model, tokenizer)
    if metrics:
        if config.best_by != "mean" and config.best_by not in metrics:
            raise ConfigError(f"--best_by={config.best_by!r}: that head has no validation "
                              f"data; heads scored: {', '.join(metrics)}.")
        metric = ("mean" if config.best_by == "mean"
                  else f"{config.best_by}/{metrics[config.best_by]}")
        evaluation = kbert_callbacks.Evaluation(
            score, metric, os.path.join(config.model_dir, "best") if config.keep_best else None)
        callbacks.append(evaluation)
    if config.unfreeze_every:
        callbacks.append(layer_wise.GradualUnfreezing(config.unfreeze_every,
                                                      config.unfreeze_unit))
    callbacks += [checkpoints, keras.callbacks.TensorBoard(
        os.path.join(config.model_dir, "logs"), write_graph=False)]

    logs = {}
    if start_step >= total_steps:
        print(f"Already trained {start_step} of {total_steps} steps.")
    else:
        # Each head's stream is the same from every iterator: skipping the batches it took
        # before `start_step` resumes it where the killed run was.
        taken = task_sampling.batches_taken(sequence, start_step, len(prepared))
        iterators = {head.name: iter(head.task.training_stream(
            head.config, model.heads[head.name], head.train, tokenizer).skip(count))
            for head, count in zip(prepared, taken)}
        history = train(model, sequence, iterators, config.epochs, steps_per_epoch,
                        initial_epoch=start_step // steps_per_epoch, callbacks=callbacks,
                        verbose=config.verbose)
        logs = {k: v[-1] for k, v in history.history.items()}
    best = evaluation and evaluation.finish(model, restore=config.keep_best)
    _save(model, tokenizer, config, prepared)
    return {"best": best, "logs": logs, "sequence": sequence, "step_times": None}


def _save(model, tokenizer, config, prepared):
    """model_dir/NAME/model.keras (compiled with the task's defaults) and the tokenizer's
    files for each head; with --export_dir, each head's SavedModel (`model.export`: its
    pipeline's answers) in export_dir/NAME."""
    from kbert.tokenizers.files import write_tokenizer_files

    for head in prepared:
        directory = os.path.join(config.model_dir, head.name)
        tf.io.gfile.makedirs(directory)
        saved = model.heads[head.name]
        # Compiled with its task's defaults: the run's optimizer state spans every head (a
        # run resumes from checkpoints/, not from these).
        saved.compile()
        saved.optimizer.build(saved.trainable_variables)  # as a reload builds it
        saved.save(os.path.join(directory, "model.keras"))
        write_tokenizer_files(tokenizer, directory)
    print(f"Saved each head's fine-tuned model to {config.model_dir}/<head>/model.keras.")
    if config.export_dir:
        for head in prepared:
            model.heads[head.name].export(os.path.join(config.export_dir, head.name),
                                          tokenizer=tokenizer,
                                          **head.task.export_options(head.config, head.train))
        print(f"Exported each head's SavedModel to {config.export_dir}/<head>.")
