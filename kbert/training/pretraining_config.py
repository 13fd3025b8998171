"""`PretrainingConfig`: every setting of a pretraining run, each one flag of tools/pretrain.py."""

import dataclasses
from typing import Optional

import tensorflow as tf

from kbert import models, presets
from kbert.data.inputs import INPUT_HELP
from kbert.data.masking import MASKINGS
from kbert.training import run_config
from kbert.training.objectives import OBJECTIVES
from kbert.training.optimizers import DECAYS, OPTIMIZERS
from kbert.training.run_config import ConfigError, setting
from kbert.training.strategies import STRATEGIES

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
DEFAULT_TRAIN_STEPS = 1000


@dataclasses.dataclass
class PretrainingConfig:
    """Everything a pretraining run needs. tools/pretrain.py has one flag per field."""

    # === Model ===
    model_dir: str = setting(help="Checkpoints, TensorBoard logs, vocab.txt, config.json "
                             "(a directory; required).", group="Output")
    preset: str = setting("bert_tiny", "kbert preset to pretrain: "
                          f"{', '.join(presets.list())}.", group="Model", aliases=["model"])
    config_overrides: dict = setting(
        help="Architecture field override KEY=VALUE (JSON value), repeatable, e.g. "
             "--config_override=dropout=0.0; any field of the preset's config.",
        group="Model", flag="config_override", from_flag=run_config.key_values,
        default_factory=dict)
    init_checkpoint: Optional[str] = setting(
        None, "Start the model weights from this run's model_dir or checkpoint (e.g. phase 2 "
              "from phase 1); ignored when resuming. Unset: random weights.", group="Model")
    # === Data ===
    input: str = setting("stdlib", f"Corpus: {INPUT_HELP}; or 'tfrecord:GLOB' for "
                         "original-format TFRecords.", group="Data")
    vocab_file: Optional[str] = setting(
        None, "WordPiece vocab.txt (a path); unset: learn one of --learned_vocabulary_size "
              "tokens into model_dir.", group="Data", aliases=["vocab"])
    learned_vocabulary_size: int = setting(
        8000, "Target size of a learned vocabulary (an integer >= 1).", group="Data",
        minimum=1, aliases=["vocab_size"])
    lowercase: bool = setting(True, "Lower-case and strip accents (uncased): true or false.",
                              group="Data")
    sequence_length: int = setting(128, "Tokens per example (an integer >= 1, at most the "
                                   "model's max_sequence_length).", group="Data", minimum=1)
    max_predictions: int = setting(20, "Masked positions per example (an integer >= 1).",
                                   group="Data", minimum=1)
    objective: str = setting(
        "mlm_nsp", "Pretraining objective: " + "; ".join(
            f"{o.name}: {o.help}" for o in OBJECTIVES.values()) + ".",
        group="Data", choices=OBJECTIVES)
    masking: str = setting("token", "Masking unit: token, word (whole words) or ngram "
                           "(n-grams of 1-3 whole words).", group="Data", choices=MASKINGS)
    masked_lm_prob: float = setting(0.15, "Fraction of tokens to predict, in (0, 1).",
                                    group="Data")
    short_seq_prob: float = setting(0.1, "Probability of a shorter target length, in [0, 1].",
                                    group="Data")
    # ELECTRA (--objective=rtd)
    generator_hidden_fraction: float = setting(
        0.25, "ELECTRA generator width as a fraction of the discriminator's, in (0, 1].",
        group="Model")
    mlm_loss_weight: float = setting(1.0, "Weight of the ELECTRA generator's masked-LM loss "
                                     "(>= 0).", group="Schedule", minimum=0)
    rtd_loss_weight: float = setting(50.0, "Weight of ELECTRA's replaced-token-detection loss "
                                     "(>= 0).", group="Schedule", minimum=0)
    # Distillation (--objective=distill)
    teacher: Optional[str] = setting(
        None, "Teacher of --objective=distill: a kbert run's --model_dir, a preset name (its "
              "pretrained release) or a checkpoint directory (Hugging Face, TF1, keras-hub, "
              "kbert). The student (--preset) uses its vocabulary.", group="Model")
    temperature: float = setting(2.0, "Softmax temperature of the distillation KL (> 0).",
                                 group="Schedule")
    distill_kl_weight: float = setting(5.0, "Weight of the KL to the teacher, x T^2 (>= 0).",
                                       group="Schedule", minimum=0)
    distill_mlm_weight: float = setting(2.0, "Weight of the student's masked-LM loss (>= 0).",
                                        group="Schedule", minimum=0)
    distill_cosine_weight: float = setting(
        1.0, "Weight of the cosine loss between student and teacher hidden states (>= 0).",
        group="Schedule", minimum=0)
    init_student: bool = setting(True, "Start the student from the teacher's embeddings, "
                                 "layers and MLM head: true or false.", group="Model")
    student_layers: Optional[list] = setting(
        None, "Teacher layer of each student layer, comma-separated integers, e.g. "
              "0,2,4,7,9,11 (default: spread evenly, which is that for 6 of 12).",
        group="Model", from_flag=run_config.integers)
    # === Schedule ===
    global_batch_size: int = setting(32, "Sequences per step over all replicas (an integer "
                                     ">= 1, divisible by the replicas).", group="Schedule",
                                     minimum=1)
    train_steps: Optional[int] = setting(
        None, f"Training steps, a multiple of --steps_per_loop (give this or --epochs; "
              f"neither: {DEFAULT_TRAIN_STEPS}).", group="Schedule", minimum=1)
    epochs: Optional[int] = setting(None, "Passes over the data, an integer >= 1 (give this or "
                                    "--train_steps).", group="Schedule", minimum=1)
    steps_per_loop: int = setting(100, "Steps between checkpoints and log lines (an integer "
                                  ">= 1).", group="Schedule", minimum=1)
    optimizer: str = setting("adamw", "Optimizer: adamw or lamb.", group="Schedule",
                             choices=OPTIMIZERS)
    learning_rate: float = setting(1e-4, "Peak learning rate (> 0).", group="Schedule")
    warmup_steps: int = setting(0, "Linear warm-up steps, in [0, --train_steps].",
                                group="Schedule")
    decay: str = setting("linear", "Decay after warm-up: linear, polynomial or constant.",
                         group="Schedule", choices=DECAYS)
    power: float = setting(1.0, "Power of the polynomial decay (> 0).", group="Schedule")
    end_learning_rate: float = setting(0.0, "Learning rate at the last step (>= 0).",
                                       group="Schedule", minimum=0)
    weight_decay: float = setting(0.01, "Decoupled weight decay, not on LayerNorm or biases "
                                  "(>= 0).", group="Schedule", minimum=0)
    clipnorm: Optional[float] = setting(1.0, "Global gradient-norm clipping (> 0; 0: off).",
                                        group="Schedule", from_flag=run_config.zero_is_none)
    gradient_accumulation_steps: int = setting(
        1, "Batches per optimizer update (an integer >= 1; 1 under several replicas).",
        group="Schedule", minimum=1)
    # === Hardware ===
    precision: str = setting("float32", "Keras dtype policy (mixed_float16 scales the loss).",
                             group="Hardware", choices=PRECISIONS)
    jit_compile: bool = setting(True, "Compile the train step with XLA: true or false.",
                                group="Hardware")
    steps_per_execution: int = setting(1, "Steps per tf.function call (an integer >= 1).",
                                       group="Hardware", minimum=1)
    strategy: str = setting("default", "tf.distribute strategy (multi_worker reads TF_CONFIG).",
                            group="Hardware", choices=STRATEGIES)
    tpu: str = setting("", "TPU for --strategy=tpu: 'local' on a TPU VM (Colab's TPU runtime), "
                       "else its name or grpc:// address ('' reads $TPU_NAME or "
                       "$COLAB_TPU_ADDR).", group="Hardware")
    # === Output ===
    export_dir: Optional[str] = setting(None, "Export a SavedModel here at the end (a "
                                        "directory; unset: no export).", group="Output")
    seed: int = setting(0, "Seed of every random choice: data, masks, init, dropout (an "
                        "integer).", group="Output")
    verbose: int = setting(1, "Keras verbosity: 0 silent, 1 progress bar, 2 one line per loop.",
                           group="Output", minimum=0)

    def __post_init__(self):
        if self.train_steps is None and self.epochs is None:
            self.train_steps = DEFAULT_TRAIN_STEPS

    @property
    def family(self):
        return presets.get(self.preset)["model"]

    def validate(self):
        """Fails fast, naming the flag, before any work starts."""
        run_config.check(self)
        try:
            family = self.family
        except ValueError as e:
            raise ConfigError(f"--preset: {e}") from None
        self._check_objective(family)
        self._check_data()
        self._check_schedule()

    def _check_objective(self, family):
        objective = OBJECTIVES[self.objective]
        if objective.sentence_task != "none" and not (
                models.FAMILIES[family].pretrainer.has_sentence_head):
            own = [o.name for o in OBJECTIVES.values() if family in (o.families or ())]
            use = f"--objective={own[0]} (or mlm)" if own else "--objective=mlm"
            raise ConfigError(f"--objective={self.objective}: {self.preset} ({family}) has no "
                              f"sentence-level head; use {use}.")
        if objective.families and family not in objective.families:
            allowed = [p for p in presets.list() if presets.get(p)["model"] in objective.families]
            raise ConfigError(
                f"--objective={self.objective} ({objective.help}) needs a preset of the "
                f"{' or '.join(objective.families)} family ({', '.join(allowed)}); "
                f"--preset={self.preset} is {family}.")
        if objective.needs_teacher != (self.teacher is not None):
            distill = next(o.name for o in OBJECTIVES.values() if o.needs_teacher)
            raise ConfigError(f"--objective={distill} and --teacher go together: give both or "
                              "neither.")
        if objective.check:
            objective.check(self)

    def _check_data(self):
        source = self.input.removeprefix("tfrecord:")
        if source != "stdlib" and not source.startswith("tfds:"):
            from kbert.data.corpora import expand_patterns

            try:
                expand_patterns([p for p in source.split(",") if p] or [source])
            except FileNotFoundError as e:
                raise ConfigError(f"--input: {e}") from None
        if self.vocab_file is not None and not tf.io.gfile.exists(self.vocab_file):
            raise ConfigError(f"--vocab_file={self.vocab_file!r} does not exist.")
        try:
            max_positions = presets.config(self.preset,
                                           **self.config_overrides).max_sequence_length
        except (TypeError, ValueError) as e:
            raise ConfigError(f"--config_override: {e}") from None
        if self.sequence_length > max_positions:
            raise ConfigError(f"--sequence_length={self.sequence_length} is longer than the "
                              f"model's max_sequence_length={max_positions} (preset "
                              f"{self.preset}).")

    def _check_schedule(self):
        if (self.train_steps is None) == (self.epochs is None):
            raise ConfigError("Give exactly one of --train_steps and --epochs.")
        if self.train_steps is not None and self.train_steps % self.steps_per_loop:
            raise ConfigError(f"--train_steps={self.train_steps} must be a multiple of "
                              f"--steps_per_loop={self.steps_per_loop} (checkpoints are "
                              "written every loop).")
        if self.warmup_steps < 0 or (self.train_steps is not None
                                     and self.warmup_steps > self.train_steps):
            raise ConfigError(f"--warmup_steps={self.warmup_steps} must be in "
                              f"[0, --train_steps={self.train_steps}].")
