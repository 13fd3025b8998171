"""The pretraining run behind tools/pretrain.py: every flag is a field of `PretrainingConfig`."""

import dataclasses
import json
import os
from typing import Optional

import keras
import tensorflow as tf
from absl import logging

from kbert import presets
from kbert.data import inputs, pretraining_dataset, tfrecords
from kbert.data.masking import UNITS
from kbert.training import callbacks as kbert_callbacks
from kbert.training.optimizers import DECAYS, OPTIMIZERS, create_optimizer
from kbert.training.strategies import STRATEGIES, create_strategy

# objective -> (sentence pairs, presets.load head)
OBJECTIVES = {"mlm": ("none", "mlm"), "mlm_nsp": ("nsp", "pretrainer"),
              "mlm_sop": ("sop", "pretrainer"), "rtd": ("none", "pretrainer"),
              "distill": ("none", "mlm")}
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


class ConfigError(ValueError):
    """A pretraining setting that cannot run; the message names the flag and what is allowed."""


@dataclasses.dataclass
class PretrainingConfig:
    """Everything a pretraining run needs. tools/pretrain.py has one flag per field."""

    model_dir: str
    preset: str = "bert_tiny"
    config_overrides: dict = dataclasses.field(default_factory=dict)
    input: str = "stdlib"
    vocab: Optional[str] = None
    vocab_size: int = 8000
    lowercase: bool = True
    sequence_length: int = 128
    max_predictions: int = 20
    objective: str = "mlm_nsp"
    masking: str = "token"
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    global_batch_size: int = 32
    train_steps: Optional[int] = 1000
    epochs: Optional[int] = None
    steps_per_loop: int = 100
    optimizer: str = "adamw"
    learning_rate: float = 1e-4
    warmup_steps: int = 0
    decay: str = "linear"
    power: float = 1.0
    end_learning_rate: float = 0.0
    weight_decay: float = 0.01
    clipnorm: Optional[float] = 1.0
    gradient_accumulation_steps: int = 1
    precision: str = "float32"
    jit_compile: bool = True
    steps_per_execution: int = 1
    strategy: str = "default"
    tpu: str = ""
    init_checkpoint: Optional[str] = None
    generator_hidden_fraction: float = 0.25
    mlm_loss_weight: float = 1.0
    rtd_loss_weight: float = 50.0
    teacher: Optional[str] = None
    temperature: float = 2.0
    distill_kl_weight: float = 5.0
    distill_mlm_weight: float = 2.0
    distill_cosine_weight: float = 1.0
    init_student: bool = True
    student_layers: Optional[list] = None
    export_dir: Optional[str] = None
    seed: int = 0
    verbose: int = 1

    def validate(self):
        """Fails fast, naming the field, before any work starts."""
        choices = {"objective": tuple(OBJECTIVES), "masking": UNITS, "optimizer": OPTIMIZERS,
                   "decay": DECAYS, "precision": PRECISIONS, "strategy": STRATEGIES}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(
                    f"--{name}={getattr(self, name)!r} is not one of: {', '.join(allowed)}."
                )
        try:
            family = presets.get(self.preset)["model"]
        except ValueError as e:
            raise ConfigError(f"--preset: {e}") from None
        from kbert import models

        if family not in models.FAMILIES:
            raise ConfigError(f"--preset={self.preset}: unknown model family {family!r}.")
        if OBJECTIVES[self.objective][0] != "none" and (
                not models.FAMILIES[family][2].has_sentence_head):
            use = "--objective=rtd (or mlm)" if family == "electra" else "--objective=mlm"
            raise ConfigError(
                f"--objective={self.objective}: {self.preset} ({family}) has no sentence-level "
                f"head; use {use}."
            )
        if self.objective == "rtd" and family != "electra":
            electras = [p for p in presets.list() if presets.get(p)["model"] == "electra"]
            raise ConfigError(
                f"--objective=rtd (replaced-token detection) needs an ELECTRA preset "
                f"({', '.join(electras)}); --preset={self.preset} is {family}."
            )
        if self.objective == "rtd":
            from kbert.models.electra.electra_generator import generator_size

            try:
                generator_size(presets.config(self.preset), self.generator_hidden_fraction)
            except ValueError as e:
                raise ConfigError(f"--{e}") from None
        if (self.objective == "distill") != (self.teacher is not None):
            raise ConfigError("--objective=distill and --teacher go together: give both or "
                              "neither.")
        if self.teacher is not None and self.teacher not in presets.list() and not (
                tf.io.gfile.exists(self.teacher) or tf.io.gfile.exists(self.teacher + ".index")):
            raise ConfigError(
                f"--teacher={self.teacher!r}: not a kbert run (model_dir with config.json and "
                f"checkpoints/), a preset ({', '.join(presets.list())}) or a checkpoint "
                "directory: it does not exist."
            )
        if self.temperature <= 0:
            raise ConfigError(f"--temperature must be > 0, got {self.temperature!r}.")
        for name in ("mlm_loss_weight", "rtd_loss_weight", "distill_kl_weight",
                     "distill_mlm_weight", "distill_cosine_weight"):
            if getattr(self, name) < 0:
                raise ConfigError(f"--{name} must be >= 0, got {getattr(self, name)!r}.")
        source = self.input[len("tfrecord:"):] if self.input.startswith("tfrecord:") else self.input
        if source != "stdlib" and not source.startswith("tfds:"):
            from kbert.data.corpora import expand_patterns

            try:
                expand_patterns([p for p in source.split(",") if p] or [source])
            except FileNotFoundError as e:
                raise ConfigError(f"--input: {e}") from None
        try:
            max_positions = presets.config(self.preset,
                                           **self.config_overrides).max_sequence_length
        except (TypeError, ValueError) as e:
            raise ConfigError(f"--config_override: {e}") from None
        if self.sequence_length > max_positions:
            raise ConfigError(
                f"--sequence_length={self.sequence_length} is longer than the model's "
                f"max_sequence_length={max_positions} (preset {self.preset})."
            )
        if (self.train_steps is None) == (self.epochs is None):
            raise ConfigError("Give exactly one of --train_steps and --epochs.")
        for name in ("global_batch_size", "steps_per_loop", "sequence_length",
                     "max_predictions", "gradient_accumulation_steps", "steps_per_execution"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"--{name} must be an integer >= 1, got {value!r}.")
        if self.train_steps is not None and self.train_steps % self.steps_per_loop:
            raise ConfigError(
                f"--train_steps={self.train_steps} must be a multiple of "
                f"--steps_per_loop={self.steps_per_loop} (checkpoints are written every loop)."
            )
        if self.warmup_steps < 0 or (self.train_steps is not None
                                     and self.warmup_steps > self.train_steps):
            raise ConfigError(f"--warmup_steps={self.warmup_steps} must be in "
                              f"[0, --train_steps={self.train_steps}].")
        if self.vocab is not None and not tf.io.gfile.exists(self.vocab):
            raise ConfigError(f"--vocab={self.vocab!r} does not exist.")


def _tokenizer(config, model_dir, teacher=None):
    from kbert.tokenizers import WordPieceTokenizer
    from kbert.tokenizers.vocab_learning import learn_vocabulary, write_vocabulary
    from kbert.tokenizers.word_piece_tokenizer import read_vocabulary

    path = config.vocab or os.path.join(model_dir, "vocab.txt")
    if teacher is not None:  # the student speaks the teacher's vocabulary
        if not tf.io.gfile.exists(path):
            write_vocabulary(teacher.vocabulary, path)
        elif read_vocabulary(path) != teacher.vocabulary:
            raise ConfigError(f"{path} is not the vocabulary of the teacher ({teacher.description})"
                              "; leave --vocab unset to use the teacher's.")
        return WordPieceTokenizer(path, lowercase=teacher.lowercase)
    if config.vocab is None and not tf.io.gfile.exists(path):
        print(f"Learning a WordPiece vocabulary (~{config.vocab_size} tokens) from "
              f"{config.input} ...", flush=True)
        write_vocabulary(learn_vocabulary(inputs.documents(config.input), config.vocab_size,
                                          lowercase=config.lowercase), path)
    return WordPieceTokenizer(path, lowercase=config.lowercase)


def _dataset(config, tokenizer, repeat):
    """The training batches; `repeat=True`: the endless stream, the same from every iterator."""
    pairs = OBJECTIVES[config.objective][0]
    if config.input.startswith("tfrecord:"):
        return tfrecords.read(config.input[len("tfrecord:"):], config.sequence_length,
                              config.max_predictions, config.global_batch_size,
                              next_sentence_labels=pairs != "none", seed=config.seed,
                              repeat=repeat)
    return pretraining_dataset(
        inputs.documents(config.input), tokenizer, sequence_length=config.sequence_length,
        max_predictions=config.max_predictions, batch_size=config.global_batch_size,
        objective=pairs, unit=config.masking, rate=config.masked_lm_prob,
        short_seq_prob=config.short_seq_prob, seed=config.seed, repeat=repeat,
    )


def run_pretraining(config):
    """Pretrains, checkpointing every loop, resuming from `model_dir` when it has a checkpoint.

    Returns the last loop's logs (loss, mlm_accuracy, ...).
    """
    config.validate()
    keras.utils.set_random_seed(config.seed)
    strategy = create_strategy(config.strategy, config.tpu)
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
    teacher = None
    if config.objective == "distill":
        from kbert.training.distillation import teacher_source

        teacher = teacher_source(config.teacher)
    # Under MultiWorkerMirrored every worker saves (saving may sync them), but only the chief
    # writes to model_dir and export_dir; the others write under model_dir/workers/.
    work_dir = _worker_dir(strategy, config.model_dir)
    tf.io.gfile.makedirs(work_dir)
    with tf.io.gfile.GFile(os.path.join(work_dir, "config.json"), "w") as f:
        json.dump(dataclasses.asdict(config), f, indent=2)
    tokenizer = _tokenizer(config, work_dir, teacher)
    if config.epochs is not None:
        steps_per_epoch = sum(1 for _ in _dataset(config, tokenizer, repeat=False))
        train_steps = steps_per_epoch * config.epochs
        train_steps -= train_steps % config.steps_per_loop
        print(f"{steps_per_epoch} batches per epoch: {train_steps} steps in all.")
        if not train_steps:
            raise ConfigError(f"--epochs={config.epochs} is less than one loop of "
                             f"--steps_per_loop={config.steps_per_loop} steps.")
        if config.warmup_steps > train_steps:
            raise ConfigError(f"--warmup_steps={config.warmup_steps} is more than the "
                              f"{train_steps} steps of --epochs={config.epochs}.")
    else:
        train_steps = config.train_steps

    head = OBJECTIVES[config.objective][1]
    with strategy.scope():
        overrides = {"vocabulary_size": tokenizer.vocabulary_size, **config.config_overrides}
        model = _model(config, head, overrides)
        if teacher is not None:
            from kbert.models import Distiller

            print(f"Teacher: {teacher.description}.")
            model = Distiller(
                model, teacher.build(None if config.precision == "float32" else
                                     config.precision),
                temperature=config.temperature, kl_weight=config.distill_kl_weight,
                mlm_weight=config.distill_mlm_weight,
                cosine_weight=config.distill_cosine_weight, name="distiller",
            )
        optimizer = create_optimizer(
            config.optimizer, learning_rate=config.learning_rate,
            warmup_steps=config.warmup_steps, total_steps=train_steps, decay=config.decay,
            power=config.power, end_learning_rate=config.end_learning_rate,
            weight_decay=config.weight_decay, clipnorm=config.clipnorm,
            gradient_accumulation_steps=config.gradient_accumulation_steps,
        )
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
        elif start_step == 0 and teacher is not None and config.init_student:
            from kbert.models import initialize_student

            try:
                layers = initialize_student(model.student, model.teacher, config.student_layers)
            except ValueError as e:
                raise ConfigError(f"{e} Pass --noinit_student to start from random weights.")
            print(f"Initialized the student from the teacher's embeddings and layers {layers}.")
    if start_step >= train_steps:
        print(f"Already trained {start_step} of {train_steps} steps.")
        logs = {}
    else:
        # The stream is the same from every iterator: skipping the steps done restores its
        # position. A step is one batch (Keras accumulates gradients inside the optimizer).
        stream = _dataset(config, tokenizer, repeat=True).skip(start_step)
        # Workers of MultiWorkerMirrored each build the whole stream and keep their rows of
        # every global batch (the Python-built pairs cannot be split by file).
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.DATA)
        stream = stream.with_options(options)
        # Only the features the model takes (DistilBERT has no segment_ids).
        names = set(getattr(model, "feature_names", None) or model.input)
        stream = stream.map(lambda x, y: ({k: v for k, v in x.items() if k in names}, y))
        if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
            _patch_keras_for_multi_worker(model)
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
            ],
        )
        logs = {k: v[-1] for k, v in history.history.items()}
        summary = ", ".join(f"{k} {logs[k]:.4f}" for k in
                            ("mlm_accuracy", "nsp_accuracy", "rtd_accuracy", "mlm_loss",
                             "nsp_loss", "rtd_loss", "kl_loss") if k in logs)
        print(f"Final ({train_steps} steps): {summary}")
    if config.export_dir:
        export_dir = config.export_dir
        if work_dir != config.model_dir:
            export_dir = os.path.join(work_dir, "export")
        export(model, tokenizer, export_dir, config.sequence_length)
    return logs


def _model(config, head, overrides):
    """The randomly initialised model that `config.objective` trains."""
    dtype = None if config.precision == "float32" else config.precision
    if config.objective == "rtd":
        from kbert.models import ElectraPretrainer

        backbone = presets.load(config.preset, head=None, weights=None, dtype=dtype,
                                **overrides)
        return ElectraPretrainer(
            backbone, generator_hidden_fraction=config.generator_hidden_fraction,
            mlm_loss_weight=config.mlm_loss_weight, rtd_loss_weight=config.rtd_loss_weight,
            seed=config.seed, name=config.preset,
        )
    return presets.load(config.preset, head=head, weights=None, dtype=dtype, **overrides)


def _patch_keras_for_multi_worker(model):
    """Works around two places where Keras 3's fit() fails under MultiWorkerMirrored.

    (tensorflow/tensorflow#72388.) 1. Before training, fit() reduces a first input batch
    across the workers only to build the model symbolically, and that reduce fails on a dict
    of inputs; the model and its optimizer are built already, so the build is skipped. 2. The
    step's scalar logs are averaged across workers with `reduce("MEAN", axis=0)`, which fails
    on scalars; each log is given a length-1 axis, so that reduce averages the workers'
    values. Weights and gradients are untouched by both.
    """
    model._maybe_symbolic_build = lambda *args, **kwargs: None
    train_step = model.train_step

    def train_step_with_vector_logs(data):
        logs = train_step(data)
        return {name: tf.reshape(value, [1]) for name, value in logs.items()}

    model.train_step = train_step_with_vector_logs


def _worker_dir(strategy, model_dir):
    """`model_dir` on the chief (or the only worker); model_dir/workers/TYPE_ID elsewhere."""
    if getattr(strategy.extended, "should_checkpoint", True):
        return model_dir
    resolver = strategy.cluster_resolver
    return os.path.join(model_dir, "workers", f"{resolver.task_type}_{resolver.task_id}")


def _init_from(model, model_dir):
    """Model weights (not the optimizer) from another run's newest checkpoint (phase 2)."""
    path = tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints")) or model_dir
    tf.train.Checkpoint(model=list(model.variables)).restore(path).expect_partial()
    print(f"Initialized the model from {path}.")


def export(model, tokenizer, export_dir, sequence_length):
    """A SavedModel with the tokenizer inside (`kbert.export.export_saved_model`)."""
    from kbert.export import export_saved_model

    from kbert.models import BertPretrainer

    model = getattr(model, "student", model)  # a distillation exports the student
    export_saved_model(model, export_dir, tokenizer, sequence_length=sequence_length)
    signatures = "serving_default, serving_pairs, serving_ids" + (
        ", fill_mask" if isinstance(model, BertPretrainer) else "")
    what = "the discriminator" if hasattr(model, "rtd_head") else "the backbone"
    print(f"Exported {what} as a SavedModel (signatures {signatures}) to {export_dir}.")
    logging.info("SavedModel written to %s", export_dir)
