"""`FinetuningConfig`: every setting of a fine-tuning run, each one flag of tools/finetune.py."""

import dataclasses
import os
from typing import Optional

from kbert import presets
from kbert.tasks.question_answering.features import default_doc_stride
from kbert.tasks import registry
from kbert.training import config_fields, multitask_config
from kbert.training.config_fields import ConfigError, setting
from kbert.training.task_sampling import SAMPLINGS
from kbert.training.run_settings import RunConfig

# The tasks `--task` takes: the records of `kbert.tasks.registry` with fine-tuning.
TASKS = tuple(record.name for record in registry.finetuning_tasks())
TAG_SCHEMES = ("IOB2", "BIO", "IOB1", "BIOES", "IOBES", "BILOU")
UNFREEZE_UNITS = ("step", "epoch")
DATA_HELP = ("'tfds:NAME' (glue/sst2, glue/mrpc, glue/mnli, glue/stsb, glue/cola, squad/v1.1, "
             "squad/v2.0, conll2003) or a file: CSV/TSV/JSONL (text_classifier), CoNLL "
             "columns (token_classifier), SQuAD JSON (question_answerer)")


@dataclasses.dataclass
class FinetuningConfig(RunConfig):
    """Everything a fine-tuning run needs. tools/finetune.py has one flag per field (the
    output, hardware and optimizer fields come from `RunConfig`)."""

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
    head: str = setting("auto", "text_classifier head: auto (the family's, as transformers "
                        "has it), pooled (the pooler's output), cls (the [CLS] hidden "
                        "state) or mean (ModernBERT's mean pooling).", group="Model",
                        choices=("auto", "pooled", "cls", "mean"))
    # === Data ===
    train_data: Optional[str] = setting(
        None, f"Training data: {DATA_HELP} (required, but for --multitask).", group="Data")
    validation_data: Optional[str] = setting(
        None, "Evaluation data after every epoch, in the same forms; unset: the TFDS "
              "dataset's validation split, or no evaluation for files.", group="Data")
    text_column: str = setting("sentence", "text_classifier files: the column (CSV/TSV "
                               "header name or 0-based index, JSONL key) of the text.",
                               group="Data")
    text_pair_column: Optional[str] = setting(
        None, "text_classifier files: the column of the second text of a pair; unset: "
              "single texts.", group="Data")
    label_column: str = setting("label", "text_classifier files: the column of the label "
                                "(class names, integers, or numbers for a regression).",
                                group="Data")
    word_column: int = setting(0, "token_classifier CoNLL files: the 0-based column of the "
                               "words (an integer).", group="Data")
    tag_column: int = setting(-1, "token_classifier CoNLL files: the column of the tags "
                              "(an integer; -1: the last).", group="Data")
    tag_scheme: str = setting("IOB2", "token_classifier: how tags mark entities.",
                              group="Data", choices=TAG_SCHEMES)
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
    doc_stride: Optional[int] = setting(
        None, "question_answerer: context pieces a window repeats from the one before, as "
              "transformers' doc_stride (an integer >= 0, smaller than --sequence_length "
              "minus --max_question_length minus 4); unset: min(--sequence_length // 2, "
              "128), as transformers' pipeline, lowered under that bound.", group="Data",
        minimum=0)
    max_question_length: int = setting(64, "question_answerer: question pieces kept (an "
                                       "integer >= 1).", group="Data", minimum=1)
    max_answer_length: int = setting(30, "question_answerer: longest answer in pieces (an "
                                     "integer >= 1).", group="Data", minimum=1)
    n_best: int = setting(20, "question_answerer: start and end candidates searched per "
                          "window (an integer >= 1).", group="Data", minimum=1)
    null_threshold: float = setting(0.0, "question_answerer on SQuAD 2.0: answer nothing when "
                                    "the [CLS] score beats the best span by more than this.",
                                    group="Data")
    summary_windows: str = setting(
        "first", "extractive_summarizer: what of a document longer than --sequence_length is "
                 "scored: first (BERTSum's: the sentences that fit, every position the "
                 "token's place in the document) or all (windows of whole sentences, their "
                 "positions from 0 again; every sentence can be chosen).", group="Data",
        choices=("first", "all"))
    summary_segments: str = setting(
        "sentence", "extractive_summarizer: what the segment ids alternate by: sentence "
                    "(BERTSum's interval segments) or paragraph (each paragraph's sentences "
                    "share its id, so the model sees where paragraphs end; blank lines end "
                    "them).", group="Data", choices=("sentence", "paragraph"))
    summary_labels: str = setting(
        "oracle", "extractive_summarizer: training targets: oracle (BERTSum's: 1 for the "
                  "sentences of the greedy ROUGE oracle, 0 for the others) or rouge (soft: "
                  "each sentence's own ROUGE-1 + ROUGE-2 F against the reference, over the "
                  "document's best).", group="Data", choices=("oracle", "rouge"))
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
        if self.freeze_backbone and self.unfreeze_every:
            raise ConfigError("--freeze_backbone keeps the backbone frozen; --unfreeze_every "
                              "unfreezes it gradually: give one of them.")
        if self.task == "question_answerer" and self.max_question_length > self.sequence_length - 4:
            raise ConfigError(
                f"--max_question_length={self.max_question_length} leaves no room for the "
                f"context in --sequence_length={self.sequence_length}: it must be at most "
                f"{self.sequence_length - 4} ([CLS], two [SEP] and one context piece).")
        if self.task == "question_answerer" and self.doc_stride is not None:
            room = max(1, self.sequence_length - self.max_question_length - 4)
            if self.doc_stride >= room:
                raise ConfigError(
                    f"--doc_stride={self.doc_stride} (the context pieces a window repeats "
                    f"from the one before) must be smaller than the window's context length "
                    f"after a question of --max_question_length={self.max_question_length} "
                    f"pieces, {room} (--sequence_length={self.sequence_length} minus the "
                    "question and up to four special tokens). Lower --doc_stride or "
                    "--max_question_length, or raise --sequence_length.")
        if self.learning_rate <= 0:
            raise ConfigError(f"--learning_rate must be > 0, got {self.learning_rate!r}.")
        if self.multitask:  # last: each head's config is this one, checked above
            multitask_config.validate(self)

    def qa_doc_stride(self):
        """--doc_stride, or its default for --sequence_length and --max_question_length:
        what the run's windows and its SavedModel use."""
        if self.doc_stride is not None:
            return self.doc_stride
        return default_doc_stride(self.sequence_length, self.max_question_length, 4)
