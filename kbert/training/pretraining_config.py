"""`PretrainingConfig`: every setting of a pretraining run, each one flag of tools/pretrain.py."""

import dataclasses
import json
import os
from typing import Optional

import tensorflow as tf

from kbert import models, presets
from kbert.data.inputs import INPUT_HELP
from kbert.data.masking import MASKINGS
from kbert.tokenizers import tokenizer_types
from kbert.training import config_fields
from kbert.models.distillation.tiny_bert_distiller import STAGES
from kbert.training.objectives import DISTILL_RECIPES, OBJECTIVES
from kbert.training.config_fields import ConfigError, setting
from kbert.training.run_settings import RunConfig
DEFAULT_TRAIN_STEPS = 1000
# The families whose pretrainer takes packed rows' document ids (`--separate_documents`).
SEPARATE_DOCUMENT_FAMILIES = ("modern_bert",)


@dataclasses.dataclass
class PretrainingConfig(RunConfig):
    """Everything a pretraining run needs. tools/pretrain.py has one flag per field (the
    output, hardware and optimizer fields come from `RunConfig`)."""

    # === Model ===
    preset: str = setting("bert_tiny", "kbert preset to pretrain: "
                          f"{', '.join(presets.list())}.", group="Model", aliases=["model"])
    config_overrides: dict = setting(
        help="Architecture field override KEY=VALUE (JSON value), repeatable, e.g. "
             "--config_override=dropout=0.0; any field of the preset's config.",
        group="Model", flag="config_override", from_flag=config_fields.key_values,
        default_factory=dict)
    init_checkpoint: Optional[str] = setting(
        None, "Start the model weights from this run's model_dir or checkpoint (e.g. phase 2 "
              "from phase 1); ignored when resuming. Unset: random weights.", group="Model")
    # === Data ===
    input: str = setting("stdlib", f"Corpus: {INPUT_HELP}; or 'tfrecord:GLOB' for "
                         "original-format TFRecords.", group="Data")
    vocab_file: Optional[str] = setting(
        None, "Vocabulary file: a WordPiece vocab.txt, a SentencePiece .model or a byte-level "
              "BPE vocab.json with its merges.txt beside it (a path); unset: learn one of "
              "--learned_vocabulary_size tokens into model_dir.",
        group="Data", aliases=["vocab"])
    tokenizer_type: str = setting(
        "auto", f"Kind of vocabulary: {', '.join(tokenizer_types.TOKENIZER_TYPES)}; auto: "
                "the --vocab_file's kind (a .model file is SentencePiece, a .json one "
                "byte-level BPE), or without one the preset's (ALBERT: sentencepiece, RoBERTa: "
                "bpe, the others: wordpiece).", group="Data",
        choices=("auto", *tokenizer_types.TOKENIZER_TYPES))
    learned_vocabulary_size: int = setting(
        8000, "Target size of a learned vocabulary (an integer >= 1).", group="Data",
        minimum=1, aliases=["vocab_size"])
    lowercase: Optional[bool] = setting(
        None, "Lower-case and strip accents (uncased): true or false; default: the preset's "
        "tokenizer (uncased BERT, ALBERT, ELECTRA: true; RoBERTa, DeBERTa-v3: false). A "
        "byte-level BPE is lower-cased only (its accents stay).", group="Data")
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
    shuffle_buffer: int = setting(
        1000, "Examples of a text corpus shuffled together before batching (an integer >= 0; "
              "0: none). The documents come in the corpus's order on every pass: a buffer "
              "that holds a whole pass draws each batch from all of it, near what "
              "transformers' Trainer does (a small corpus trained for many passes).",
        group="Data", minimum=0)
    pack_across_documents: bool = setting(
        False, "An objective without a sentence task (mlm, rtd, distill): pack the sentences "
               "of consecutive documents into one segment, a separator between two "
               "(RoBERTa's FULL-SENTENCES); false: one document's sentences per example.",
        group="Data")
    fill_rows: bool = setting(
        False, "With --pack_across_documents: ModernBERT's packed sequences: each document "
               "[CLS] ... [SEP], the documents one stream cut every --sequence_length tokens "
               "(every row full, no padding; a document may run on into the next row); "
               "false: segments end at sentence boundaries.", group="Data")
    separate_documents: bool = setting(
        False, "With --fill_rows (ModernBERT, --objective=mlm): each document of a row "
               "attends only to itself (global and window layers) and its rotary positions "
               "restart at its [CLS], as ModernBERT's unpadded packed training; false: "
               "attention across the documents of a row (RoBERTa's FULL-SENTENCES).",
        group="Data")
    # Replaced-token detection (--objective=rtd: ELECTRA, DeBERTa-v3)
    generator_hidden_fraction: float = setting(
        0.25, "ELECTRA generator width as a fraction of the discriminator's, in (0, 1].",
        group="Model")
    generator_layers_fraction: Optional[float] = setting(
        None, "Generator depth as a fraction of the discriminator's layers, in (0, 1]; "
              "default: the family's (ELECTRA 1: as deep; DeBERTa-v3 0.5: half as deep, as "
              "wide, the paper's).", group="Model")
    mlm_loss_weight: float = setting(1.0, "Weight of the replaced-token-detection generator's "
                                     "masked-LM loss (>= 0).", group="Schedule", minimum=0)
    rtd_loss_weight: float = setting(50.0, "Weight of the replaced-token-detection loss "
                                     "(>= 0).", group="Schedule", minimum=0)
    # Distillation (--objective=distill)
    distill_recipe: str = setting(
        "distil_bert", "Distillation recipe of --objective=distill: distil_bert (KL + MLM + "
        "cosine, the student may start from the teacher's layers) or tiny_bert (TinyBERT: "
        "embedding, attention-score and hidden-state MSE per mapped layer, then the soft "
        "cross-entropy of the MLM logits at --temperature; the student starts random).",
        group="Schedule", choices=DISTILL_RECIPES)
    tiny_bert_stage: str = setting(
        "both", "TinyBERT's losses to train: intermediate (embeddings, attention, hidden "
        "states), prediction (soft cross-entropy of the MLM logits) or both, summed.",
        group="Schedule", choices=STAGES)
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
              "0,2,4,7,9,11 (default: distil_bert spreads them evenly, which is that for 6 of "
              "12; tiny_bert takes (i+1)*T/S-1, e.g. 2,5,8,11 for 4 of 12).",
        group="Model", from_flag=config_fields.integers)
    # === Schedule (and the optimizer's fields of RunConfig) ===
    train_steps: Optional[int] = setting(
        None, f"Training steps, a multiple of --steps_per_loop (give this or --epochs; "
              f"neither: {DEFAULT_TRAIN_STEPS}).", group="Schedule", minimum=1)
    epochs: Optional[int] = setting(None, "Passes over the data, an integer >= 1 (give this or "
                                    "--train_steps).", group="Schedule", minimum=1)
    steps_per_loop: int = setting(100, "Steps between checkpoints and log lines (an integer "
                                  ">= 1).", group="Schedule", minimum=1)
    warmup_steps: int = setting(0, "Linear warm-up steps, in [0, --train_steps].",
                                group="Schedule")

    def __post_init__(self):
        if self.train_steps is None and self.epochs is None:
            self.train_steps = DEFAULT_TRAIN_STEPS

    @property
    def family(self):
        return presets.get(self.preset)["model"]

    @property
    def resolved_generator_layers_fraction(self):
        """`generator_layers_fraction`, or the family's: DeBERTa-v3's generator is half as
        deep as its discriminator, ELECTRA's as deep (google-research/electra)."""
        if self.generator_layers_fraction is not None:
            return self.generator_layers_fraction
        return 0.5 if self.family == "deberta_v3" else 1.0

    @property
    def resolved_lowercase(self):
        """Whether the run's tokenizer lower-cases: `lowercase` if given, else the preset's
        tokenizer setting (presets/<name>.json; true where it says nothing)."""
        if self.lowercase is not None:
            return self.lowercase
        return bool(presets.get(self.preset)["tokenizer"].get("lowercase", True))

    @property
    def resolved_tokenizer_type(self):
        """The kind of vocabulary the run reads or learns (`tokenizer_type` with "auto"
        resolved: the vocab_file's kind, else the teacher's (any kind: WordPiece, SentencePiece
        or byte-level BPE), else the preset's tokenizer)."""
        if self.tokenizer_type != "auto":
            return self.tokenizer_type
        if self.vocab_file is not None:
            return tokenizer_types.type_of_file(self.vocab_file)
        if self.teacher is not None:
            return teacher_tokenizer_type(self.teacher)
        return presets.get(self.preset)["tokenizer"]["type"]

    def validate(self):
        """Fails fast, naming the flag, before any work starts."""
        super().validate()
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
        if objective.sentence_task != "none" and tokenizer_types.get(
                self.resolved_tokenizer_type).pair_layout.separators > 1:
            raise ConfigError(
                f"--objective={self.objective} trains a sentence task on BERT's pairs "
                "([CLS] A [SEP] B [SEP], segment ids 0 and 1), but a byte-level BPE vocabulary "
                "(--tokenizer_type=bpe) packs pairs as RoBERTa does (<s> A </s></s> B </s>, "
                "segment ids 0) when the model is fine-tuned and served: use --objective=mlm "
                "(RoBERTa's) or a wordpiece / sentencepiece vocabulary.")
        if self.pack_across_documents and objective.sentence_task != "none":
            raise ConfigError(f"--pack_across_documents packs one segment; --objective="
                              f"{self.objective} has a sentence task ({objective.sentence_task}"
                              "): use an objective without one (mlm) or --nopack_across_"
                              "documents.")
        if objective.check:
            objective.check(self)

    def _check_data(self):
        if self.fill_rows and not self.pack_across_documents:
            raise ConfigError("--fill_rows packs documents one after the other: it needs "
                              "--pack_across_documents.")
        if self.separate_documents:
            self._check_separate_documents()
        kind = self.resolved_tokenizer_type
        if kind not in tokenizer_types.TOKENIZER_TYPES:
            raise ConfigError(
                f"--tokenizer_type=auto: preset {self.preset}'s release tokenizes with a "
                f"{kind!r} file, which a run does not learn; give --tokenizer_type (one of "
                f"{', '.join(tokenizer_types.TOKENIZER_TYPES)}; ModernBERT's own is a "
                "byte-level BPE: bpe) or a --vocab_file.")
        if self.pack_across_documents and self.input.startswith("tfrecord:"):
            raise ConfigError("--pack_across_documents packs a text corpus; --input="
                              f"{self.input!r} reads examples made ahead of time.")
        source = self.input.removeprefix("tfrecord:")
        if source != "stdlib" and not source.startswith("tfds:"):
            from kbert.data.corpora import expand_patterns

            try:
                expand_patterns([p for p in source.split(",") if p] or [source])
            except FileNotFoundError as e:
                raise ConfigError(f"--input: {e}") from None
        if self.vocab_file is not None and not tf.io.gfile.exists(self.vocab_file):
            raise ConfigError(f"--vocab_file={self.vocab_file!r} does not exist.")
        if self.vocab_file is not None:
            kind = self.resolved_tokenizer_type
            try:
                tokenizer_types.get(kind).check_path(self.vocab_file)
            except ValueError as e:
                raise ConfigError(f"--vocab_file (--tokenizer_type={kind}): {e}") from None
            missing = [p for p in tokenizer_types.files(self.vocab_file, kind)
                       if not tf.io.gfile.exists(p)]
            if missing:
                raise ConfigError(f"--vocab_file={self.vocab_file!r} is a {kind} vocabulary "
                                  f"without {', '.join(map(repr, missing))}.")
        if self.vocab_file is not None and self.tokenizer_type != "auto":
            of_file = tokenizer_types.type_of_file(self.vocab_file)
            extensions = tokenizer_types.get(of_file).extensions
            if of_file != self.tokenizer_type and self.vocab_file.lower().endswith(extensions):
                raise ConfigError(
                    f"--tokenizer_type={self.tokenizer_type} does not read --vocab_file="
                    f"{self.vocab_file!r}: a file ending in {', '.join(extensions)} is "
                    f"{of_file}; leave --tokenizer_type=auto to follow the file.")
        if self.teacher is not None:
            of_teacher = teacher_tokenizer_type(self.teacher)
            if self.resolved_tokenizer_type != of_teacher:
                raise ConfigError(
                    f"--teacher with a {self.resolved_tokenizer_type} vocabulary (--tokenizer_"
                    f"type={self.tokenizer_type}, --vocab_file={self.vocab_file!r}): a "
                    f"distilled student speaks its teacher's {of_teacher} vocabulary; leave "
                    "--tokenizer_type auto and --vocab_file unset.")
        try:
            max_positions = presets.config(self.preset,
                                           **self.config_overrides).max_sequence_length
        except (TypeError, ValueError) as e:
            raise ConfigError(f"--config_override: {e}") from None
        if self.sequence_length > max_positions:
            raise ConfigError(f"--sequence_length={self.sequence_length} is longer than the "
                              f"model's max_sequence_length={max_positions} (preset "
                              f"{self.preset}).")

    def _check_separate_documents(self):
        if not self.fill_rows:
            raise ConfigError("--separate_documents keeps apart the documents packed into a "
                              "row: it needs --pack_across_documents --fill_rows.")
        if self.family not in SEPARATE_DOCUMENT_FAMILIES or self.objective != "mlm":
            raise ConfigError(
                f"--separate_documents: --preset={self.preset} ({self.family}) with --objective="
                f"{self.objective}; only ModernBERT's masked LM (--objective=mlm on a "
                f"{', '.join(SEPARATE_DOCUMENT_FAMILIES)} preset) keeps each document to "
                "itself. Other families attend across the documents of a row: use "
                "--noseparate_documents.")

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
        if self.decay_steps is not None and self.decay != "warmup_stable_decay":
            raise ConfigError(f"--decay_steps={self.decay_steps} sets the final decay of "
                              f"--decay=warmup_stable_decay; --decay={self.decay} has none.")
        if self.decay_steps is not None and self.train_steps is not None and (
                self.decay_steps > self.train_steps - self.warmup_steps):
            raise ConfigError(f"--decay_steps={self.decay_steps} must be at most --train_steps "
                              f"- --warmup_steps = {self.train_steps - self.warmup_steps}.")


def teacher_tokenizer_type(spec):
    """The tokenizer kind of `--teacher`, read without loading it: its preset's entry, its
    run's config.json (its tokenizer_type or vocab_file), else the tokenizer files in its
    directory (vocab.json + merges.txt: bpe, a *.model without vocab.txt: sentencepiece);
    "wordpiece" when `spec` names nothing that exists (validation refuses it, naming it)."""
    if spec in presets.list():
        return presets.get(spec)["tokenizer"].get("type", "wordpiece")
    folder = spec if os.path.isdir(spec) else os.path.dirname(spec)
    if not os.path.isdir(folder):
        return "wordpiece"
    if os.path.isdir(os.path.join(folder, "checkpoints")):  # a kbert run's model_dir
        try:
            with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
                values = json.load(f)
        except (OSError, ValueError):
            values = {}
        kind = values.get("tokenizer_type", "wordpiece")  # older runs: WordPiece
        vocab_file = values.get("vocab_file") or values.get("vocab")
        if kind != "auto":
            return kind
        if vocab_file:
            return tokenizer_types.type_of_file(vocab_file)
    return tokenizer_types.type_of_folder(folder)
