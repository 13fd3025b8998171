"""`FinetuningConfig`: every setting of a fine-tuning run, each one flag of tools/finetune.py.
The flags of one task (a question answerer's `--doc_stride`, a tagger's `--tag_scheme`, ...)
are its folder's: each fine-tuning task's `finetuning` module gives its `FLAGS` (composed
here into the config's fields) and checks them in its `check(config)`."""

import dataclasses
import os
from typing import Optional

from kbert import presets
from kbert.tasks import registry
from kbert.training import config_fields, multitask_config
from kbert.training.config_fields import ConfigError, setting
from kbert.training.task_sampling import SAMPLINGS
from kbert.training.run_settings import RunConfig

# The tasks `--task` takes: the records of `kbert.tasks.registry` with fine-tuning, and the
# `finetuning` module of each one's folder.
HOOKS = {record.name: record.module("finetuning") for record in registry.finetuning_tasks()}
TASKS = tuple(HOOKS)
UNFREEZE_UNITS = ("step", "epoch")
DATA_HELP = ("'tfds:NAME' (" + ", ".join(hooks.DATA[0] for hooks in HOOKS.values())
             + ") or a file: " + ", ".join(f"{hooks.DATA[1]} ({task})"
                                           for task, hooks in HOOKS.items()))


def xla_by_default():
    """Whether fine-tuning compiles its train step with XLA when `--jit_compile` is not
    given: where TensorFlow sees a GPU or TPU on this host, not on a CPU-only one (the CPU
    half of Keras' `compile(jit_compile="auto")` rule; a TPU reached over the network shows
    no device here, and its strategy compiles the step anyway). Decided when the config (or
    the program's flags) is made, before the run's strategy. On 2 CPU cores XLA made
    all-MiniLM-L6-v2's steps 13% shorter but compiled each batch length for about 9 s: one
    epoch of 3,000 real sentences (93 steps, 3 lengths) spent 77.4 s in fit with it and
    64.8 s without (`tools/benchmark.py finetune_real --real_xla`); XLA repays its compiles
    from about 140 steps a length."""
    import tensorflow as tf

    return any(d.device_type != "CPU" for d in tf.config.list_physical_devices())


@dataclasses.dataclass
class _RunFields(RunConfig):
    """The fields of every fine-tuning run (the output, hardware and optimizer fields come
    from `RunConfig`; each task's own are its folder's `FLAGS`)."""

    # === Model ===
    task: str = setting("text_classifier", "What to fine-tune: " + ", ".join(
        f"{r.name} ({r.summary})" for r in registry.finetuning_tasks()) + ".",
        group="Model", choices=TASKS)
    preset: Optional[str] = setting(
        None, f"Start from this preset's pretrained release: {', '.join(presets.list())} "
              "(give this or --checkpoint).", group="Model")
    checkpoint: Optional[str] = setting(
        None, "Start from a checkpoint directory of any format kbert reads (Hugging Face, "
              "TF1, keras-hub, kbert) or a tools/pretrain.py --model_dir (give this or "
              "--preset).", group="Model")
    config_overrides: dict = setting(
        help="Architecture field override KEY=VALUE (JSON value), repeatable; with "
             "pretrained weights only dropout, attention_dropout, activation, "
             "initializer_range and a shorter max_sequence_length.",
        group="Model", flag="config_override", from_flag=config_fields.key_values,
        default_factory=dict)
    # === Data ===
    train_data: Optional[str] = setting(
        None, f"Training data: {DATA_HELP} (required, but for --multitask).", group="Data")
    validation_data: Optional[str] = setting(
        None, "Evaluation data after every epoch, in the same forms; unset: the TFDS "
              "dataset's validation split, or no evaluation for files.", group="Data")
    sequence_length: int = setting(128, "Tokens per example (an integer >= 8; 384 is usual "
                                   "for question_answerer).", group="Data", minimum=8)
    group_by_length: bool = setting(
        True, "Batch examples of like length together and cut each batch to the shortest of "
              "a few lengths that holds it (16, 24, 32, 48, 64, ...; --sequence_length the "
              "longest), in training, evaluation and prediction, instead of padding every "
              "example to --sequence_length: true or false. In XLA-compiled training, a "
              "length too few batches use to repay its compile is merged into the next. Not "
              "for question_answerer (its windows are full) or on TPUs (one static shape).",
        group="Data")
    # === Hardware (and the rest of RunConfig's) ===
    jit_compile: bool = setting(
        help="Compile the train step with XLA: true or false (default: true where "
             "TensorFlow sees a GPU or TPU, false on a CPU-only host, where a compile per "
             "batch length costs more than a short run's steps save).", group="Hardware",
        default_factory=xla_by_default)
    # === Schedule (and the optimizer's fields of RunConfig) ===
    learning_rate: float = setting(2e-5, "Peak learning rate (> 0; BERT's fine-tuning: 2e-5 "
                                   "to 5e-5).", group="Schedule")
    global_batch_size: int = setting(32, "Examples per step over all replicas (an integer "
                                     ">= 1; BERT's fine-tuning: 16 or 32).", group="Schedule",
                                     minimum=1)
    epochs: int = setting(3, "Passes over the training data (an integer >= 1; BERT: 2 to 4).",
                          group="Schedule", minimum=1)
    warmup_proportion: float = setting(0.1, "Fraction of the steps with a linear warm-up, in "
                                       "[0, 1].", group="Schedule", minimum=0)
    layer_decay: float = setting(1.0, "Layer-wise learning-rate decay, in (0, 1]: the head at "
                                 "--learning_rate, each layer below multiplied by this, the "
                                 "embeddings last (1: off).", group="Schedule")
    freeze_backbone: bool = setting(False, "Train the head only: true or false.",
                                    group="Schedule")
    lora_rank: int = setting(0, "Parameter-efficient fine-tuning: freeze the backbone and "
                             "train LoRA adapters of this rank on its encoder's dense layers, "
                             "the pooler and the head (an integer >= 0; 0: off; saved merged "
                             "into the weights).", group="Schedule", minimum=0)
    unfreeze_every: int = setting(0, "Gradual unfreezing: start frozen, then unfreeze one more "
                                  "backbone layer from the top every this many "
                                  "--unfreeze_unit (an integer >= 0; 0: off).",
                                  group="Schedule", minimum=0)
    unfreeze_unit: str = setting("epoch", "What --unfreeze_every counts: step or epoch.",
                                 group="Schedule", choices=UNFREEZE_UNITS)
    # === Pruning (kbert.training.pruning) ===
    prune_heads: float = setting(
        0.0, "Structured pruning: --checkpoint is a fine-tuned run of this task; remove this "
             "fraction of its attention heads, those whose removal changes the loss on "
             "--train_data least (in [0, 1); 0: none), then fine-tune the smaller model for "
             "--epochs. BERT, RoBERTa, ELECTRA and DistilBERT models.", group="Model")
    prune_units: float = setting(
        0.0, "Structured pruning: the fraction of feed-forward units to remove, as "
             "--prune_heads (in [0, 1); 0: none).", group="Model")
    prune_layers: int = setting(
        0, "Structured pruning: the number of whole layers to remove, those whose removal "
           "alone raises the loss on --train_data least (measured: each left out in turn; "
           "0: none); --prune_heads and --prune_units are then fractions of the kept "
           "layers' heads and units.", group="Model", minimum=0)
    prune_batches: int = setting(
        200, "Structured pruning: training batches read to rank the heads, units and layers "
             "(an integer >= 1).", group="Model", minimum=1)
    prune_distil: float = setting(
        0.0, "Structured pruning: recover the smaller model by distilling it from the "
             "unpruned one (kbert.training.task_distillation): the weight of the unpruned "
             "model's answers in the loss, in [0, 1] (0: fine-tuning on the labels alone; "
             "0.5: half each). A single-label text_classifier.", group="Model")
    prune_temperature: float = setting(
        2.0, "--prune_distil: the softmax temperature of both models' answers (> 0).",
        group="Model")
    # === Early exit (kbert.training.early_exit) ===
    exit_heads: bool = setting(
        False, "Early exit: after fine-tuning a single-label text classifier, put an exit head "
               "after each layer but the last, train them for --exit_epochs, choose on "
               "--validation_data the entropy threshold that runs the fewest layers within "
               "--exit_max_drop of the full model's accuracy, and save the model with its "
               "exits (model.keras) and the threshold (early_exit.json); --export_dir's "
               "SavedModel exits early: true or false.", group="Model")
    exit_epochs: Optional[int] = setting(
        None, "--exit_heads: epochs of training the exit heads (an integer >= 1; unset: 3 "
              "with the model frozen, 1 with --exit_joint).", group="Model", minimum=1)
    exit_learning_rate: Optional[float] = setting(
        None, "--exit_heads: the exit training's learning rate (> 0; unset: 1e-3 with the "
              "model frozen, 1e-4 with --exit_joint).", group="Model")
    exit_joint: bool = setting(
        False, "--exit_heads: false (the default): only the exit heads train, the model "
               "frozen (DeeBERT's second stage), each learning the fine-tuned classifier's "
               "answers (FastBERT's self-distillation): the full model answers as before; "
               "true: the model trains with its exits (PABEE's depth-weighted loss on the "
               "labels: the full model changes a little).", group="Model")
    exit_max_drop: float = setting(0.01, "--exit_heads: the validation accuracy the chosen "
                                   "threshold may lose against the full model (a fraction "
                                   "in [0, 1): 0.01 is one point).", group="Model")
    # === Several tasks: one backbone, a head each (kbert.training.multitask) ===
    multitask: dict = setting(
        help="A head of a multi-task run, repeatable (two or more): NAME:KEY=VALUE,... with "
             "task=, train_data= (required), loss_weight= (default 1) and any Data flag "
             "(validation_data=, text_column=, sequence_length=, ...), head= or "
             "global_batch_size= for that head alone; e.g. --multitask=sst2:task="
             "text_classifier,train_data=tfds:glue/sst2. --task, --train_data and "
             "--validation_data are then not given.", group="Model",
        from_flag=multitask_config.parse_heads, default_factory=dict)
    sampling: str = setting(
        "proportional", "--multitask: the head of each step, drawn from the seed: "
        "proportional (to its training rows), temperature (p ~ rows ** (1 / "
        "--sampling_temperature)) or round_robin.", group="Schedule", choices=SAMPLINGS)
    sampling_temperature: float = setting(
        2.0, "--multitask with --sampling=temperature: T > 0 (1: proportional; larger: "
             "nearer uniform).", group="Schedule")
    best_by: str = setting(
        "mean", "--multitask: the best epoch by the mean of the heads' metrics (mean; "
                "percentages counted as fractions) or by one head's metric (its NAME).",
        group="Output")
    # === Output ===
    keep_best: bool = setting(True, "Keep the weights of the epoch with the best validation "
                              "metric in model_dir/best and export those: true or false.",
                              group="Output")

    @property
    def pruning(self):
        """Whether the run prunes its starting model (`--prune_heads`, `--prune_units`,
        `--prune_layers`)."""
        return bool(self.prune_heads or self.prune_units or self.prune_layers)

    def _check_exit_heads(self):
        problems = [problem for problem, wrong in (
            (f"--task={self.task!r} (early exit is text_classifier's)",
             self.task != "text_classifier"),
            ("no --validation_data (the threshold is chosen on it)",
             not self.multitask and self.validation_data is None),
            ("--multitask", bool(self.multitask)),
            (f"--strategy={self.strategy!r} (the exits train in one process: default or "
             "mirrored)", self.strategy not in ("default", "mirrored"))) if wrong]
        if problems:
            raise ConfigError(f"--exit_heads does not work with {'; '.join(problems)}.")
        if not 0 <= self.exit_max_drop < 1:
            raise ConfigError(f"--exit_max_drop={self.exit_max_drop!r}: a fraction in [0, 1).")
        if self.exit_learning_rate is not None and not self.exit_learning_rate > 0:
            raise ConfigError(f"--exit_learning_rate={self.exit_learning_rate!r}: a positive "
                              "number.")

    def _check_prune_distil(self):
        if not 0 <= self.prune_distil <= 1:
            raise ConfigError(f"--prune_distil={self.prune_distil!r}: the weight of the "
                              "unpruned model's answers, in [0, 1].")
        if not self.prune_temperature > 0:
            raise ConfigError(f"--prune_temperature={self.prune_temperature!r}: a positive "
                              "number.")
        if not self.prune_distil:
            return
        problems = [problem for problem, wrong in (
            ("no --prune_heads, --prune_units or --prune_layers (it recovers a pruned model)",
             not self.pruning),
            (f"--task={self.task!r} (distillation matches a text_classifier's classes)",
             self.task != "text_classifier")) if wrong]
        if problems:
            raise ConfigError(f"--prune_distil does not work with {'; '.join(problems)}.")

    def validate(self):
        """Fails fast, naming the flag, before any work starts."""
        super().validate()
        if not self.multitask and self.train_data is None:
            raise ConfigError("Give --train_data (or two or more --multitask heads).")
        if not self.multitask and self.best_by != "mean":
            raise ConfigError(f"--best_by={self.best_by!r} is for --multitask runs.")
        if (self.preset is None) == (self.checkpoint is None):
            raise ConfigError("Give exactly one of --preset and --checkpoint.")
        if self.preset is not None:
            try:
                presets.get(self.preset)
            except ValueError as e:
                raise ConfigError(f"--preset: {e}") from None
        if self.checkpoint is not None and not os.path.exists(self.checkpoint) and not (
                os.path.exists(self.checkpoint + ".index")):
            raise ConfigError(f"--checkpoint={self.checkpoint!r} does not exist.")
        for name in ("train_data", "validation_data"):
            value = getattr(self, name)
            if value is not None and not value.startswith("tfds:") and not os.path.exists(value):
                raise ConfigError(f"--{name}={value!r}: no such file ({DATA_HELP}).")
        if not 0 < self.layer_decay <= 1:
            raise ConfigError(f"--layer_decay must be in (0, 1], got {self.layer_decay!r}.")
        if not 0 <= self.warmup_proportion <= 1:
            raise ConfigError(f"--warmup_proportion must be in [0, 1], got "
                              f"{self.warmup_proportion!r}.")
        clashing = [flag for flag, given in (
            ("--freeze_backbone", self.freeze_backbone),
            (f"--unfreeze_every={self.unfreeze_every}", self.unfreeze_every),
            (f"--layer_decay={self.layer_decay}", self.layer_decay < 1)) if given]
        if self.lora_rank and clashing:
            raise ConfigError(f"--lora_rank trains adapters on a frozen backbone; it does not "
                              f"combine with {', '.join(clashing)} (given).")
        for name in ("prune_heads", "prune_units"):
            value = getattr(self, name)
            if not 0 <= value < 1:
                raise ConfigError(f"--{name}={value!r}: a fraction in [0, 1) to remove.")
        clashing = [flag for flag, given in (("--preset", self.preset is not None),
                                             ("--lora_rank", self.lora_rank),
                                             ("--multitask", self.multitask)) if given]
        if self.pruning and clashing:
            raise ConfigError(f"--prune_heads / --prune_units / --prune_layers prune the "
                              f"fine-tuned model of one task in --checkpoint (a "
                              f"tools/finetune.py run); they do not combine with "
                              f"{', '.join(clashing)} (given).")
        self._check_prune_distil()
        if self.exit_heads:
            self._check_exit_heads()
        if self.freeze_backbone and self.unfreeze_every:
            raise ConfigError("--freeze_backbone keeps the backbone frozen; --unfreeze_every "
                              "unfreezes it gradually: give one of them.")
        if not self.multitask:
            try:
                HOOKS[self.task].check(self)
            except ValueError as e:
                raise ConfigError(str(e)) from None
        if self.learning_rate <= 0:
            raise ConfigError(f"--learning_rate must be > 0, got {self.learning_rate!r}.")
        if self.multitask:  # last: each head's config is this one, checked above
            multitask_config.validate(self)


def _task_fields():
    """(name, type, field) of each fine-tuning task's `FLAGS`; a name two tasks give is a
    TypeError (a flag has one meaning)."""
    owners = {field.name: "every run" for field in dataclasses.fields(_RunFields)}
    for task, hooks in HOOKS.items():
        for name, flag in hooks.FLAGS.items():
            if name in owners:
                raise TypeError(f"The flag --{name} is given by both {owners[name]} and "
                                f"{task}: a flag belongs to one task folder.")
            owners[name] = task
            yield name, flag.kind, setting(flag.default, flag.help, group=flag.group,
                                           choices=flag.choices, minimum=flag.minimum)


FinetuningConfig = dataclasses.make_dataclass(
    "FinetuningConfig", list(_task_fields()), bases=(_RunFields,),
    namespace={"__module__": __name__, "__doc__": (
        "Everything a fine-tuning run needs. tools/finetune.py has one flag per field: the "
        "run's (`RunConfig`'s and this module's) and each task's own (`HOOKS[task].FLAGS`).")})
