"""Run directories as model sources: a `tools/pretrain.py` run (config.json, its vocabulary,
checkpoints/) and a `tools/finetune.py` run (config.json, checkpoints/ and, once it ended,
model.keras with its tokenizer files).

A pretraining run's checkpoint is a list of variables, so its model is rebuilt from
config.json exactly as the run built it: `pretraining_model` is that rule, which
`kbert.training.objectives` builds its models with too.
"""

import dataclasses
import functools
import json
import os
from typing import Optional

from kbert import models, presets

CONFIG_FILE = "config.json"
# What an objective trains: a pretraining head of `kbert.models.build`, or "rtd" (ELECTRA's or
# DeBERTa-v3's replaced-token detection). "distill" trains a student beside its teacher.
OBJECTIVE_MODELS = {"mlm": "mlm", "mlm_nsp": "pretrainer", "mlm_sop": "pretrainer",
                    "rtd": "rtd"}
RTD_FAMILIES = ("electra", "deberta_v3")


class RunError(ValueError):
    """A run directory that cannot give a model (no checkpoint, a distillation, no vocabulary,
    a config.json that is not a run's)."""


@dataclasses.dataclass
class RunSettings:
    """The fields of a pretraining run's config.json that say what its model is. The defaults
    are tools/pretrain.py's (a test checks them against `PretrainingConfig`), for runs made
    before a field existed."""

    preset: str = "bert_tiny"
    objective: str = "mlm_nsp"
    config_overrides: dict = dataclasses.field(default_factory=dict)
    precision: str = "float32"
    vocab_file: Optional[str] = None
    tokenizer_type: str = "wordpiece"
    lowercase: Optional[bool] = None
    teacher: Optional[str] = None
    seed: int = 0
    generator_hidden_fraction: float = 0.25
    generator_layers_fraction: Optional[float] = None
    mlm_loss_weight: float = 1.0
    rtd_loss_weight: float = 50.0

    @classmethod
    def from_json(cls, values):
        names = {f.name for f in dataclasses.fields(cls)}
        renamed = {"vocab": "vocab_file", "vocab_size": "learned_vocabulary_size"}
        old = sorted(set(values) & set(renamed) - names)
        if old:  # read as today's fields they would be dropped: the preset's vocabulary
            raise RunError(f"config.json has {', '.join(old)}, fields that kbert renamed "
                           f"({', '.join(f'{k} -> {renamed[k]}' for k in old)}): rename them "
                           f"in the run's config.json.")
        return cls(**{k: v for k, v in values.items() if k in names})

    @property
    def family(self):
        return presets.get(self.preset)["model"]

    def dtype(self):
        return None if self.precision == "float32" else self.precision

    @property
    def resolved_generator_layers_fraction(self):
        if self.generator_layers_fraction is not None:
            return self.generator_layers_fraction
        return 0.5 if self.family == "deberta_v3" else 1.0

    @property
    def resolved_lowercase(self):
        if self.lowercase is not None:
            return self.lowercase
        return bool(presets.get(self.preset)["tokenizer"].get("lowercase", True))


def pretraining_model(config, model, overrides):
    """The random model that objective model `model` (a value of `OBJECTIVE_MODELS`) trains
    on `config.preset`: a pretrainer with `model` as its head, or for "rtd" ELECTRA's
    pretrainer (DeBERTa-v3's, with GDES, on a deberta_v3 preset). `config` is a run's
    settings (`RunSettings` or `kbert.training.PretrainingConfig`)."""
    if model != "rtd":
        return presets.load(config.preset, head=model, weights=None, dtype=config.dtype(),
                            **overrides)
    backbone = presets.load(config.preset, head=None, weights=None, dtype=config.dtype(),
                            **overrides)
    losses = dict(mlm_loss_weight=config.mlm_loss_weight,
                  rtd_loss_weight=config.rtd_loss_weight, seed=config.seed, name=config.preset)
    if config.family == "deberta_v3":
        return models.DebertaV3RtdPretrainer(
            backbone, generator_layers_fraction=config.resolved_generator_layers_fraction,
            **losses)
    return models.ElectraPretrainer(
        backbone, generator_hidden_fraction=config.generator_hidden_fraction,
        generator_layers_fraction=config.resolved_generator_layers_fraction, **losses)


def encoder_of(model, trained):
    """The encoder that fine-tuning starts from, of a model of `trained` (a value of
    `OBJECTIVE_MODELS`): a replaced-token detector's discriminator, a pretrainer's backbone."""
    if trained == "rtd":
        model = model.discriminator()
    return getattr(model, "backbone", model)


def _read_config(path):
    config_path = os.path.join(path, CONFIG_FILE)
    try:
        with open(config_path, encoding="utf-8") as f:
            values = json.load(f)
        if not isinstance(values, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as e:
        raise RunError(f"{config_path} is not the config.json of a kbert run: {e}") from None
    return values


def is_run(path):
    """Whether `path` is a run's model_dir (config.json and checkpoints/)."""
    path = os.fspath(path)
    return (os.path.isdir(os.path.join(path, "checkpoints"))
            and os.path.exists(os.path.join(path, CONFIG_FILE)))


def is_finetuning_run(path):
    """Whether the run at `path` is a tools/finetune.py run (its config.json has --task)."""
    return is_run(path) and "task" in _read_config(os.fspath(path))


@dataclasses.dataclass
class PretrainingRun:
    """A pretraining run: `build()` gives its model with the newest checkpoint's weights."""

    path: str
    config: RunSettings
    checkpoint: Optional[str]  # None before the run's first loop ended

    @property
    def tokenizer_type(self):
        from kbert.tokenizers import tokenizer_types

        config = self.config
        if config.tokenizer_type != "auto":
            return config.tokenizer_type
        if config.vocab_file is not None:
            return tokenizer_types.type_of_file(config.vocab_file)
        return presets.get(config.preset)["tokenizer"]["type"]

    @functools.cached_property
    def _tokenizer(self):
        import tensorflow as tf

        from kbert.tokenizers import tokenizer_types

        kind = tokenizer_types.get(self.tokenizer_type)
        path = self.config.vocab_file or os.path.join(self.path, kind.file_name)
        if not tf.io.gfile.exists(path):
            raise RunError(f"{self.path} is a run without its vocabulary: {path} does not "
                           "exist.")
        return tokenizer_types.load_written(path, kind.name,
                                            lowercase=self.config.resolved_lowercase)

    @property
    def vocabulary(self):
        return self._tokenizer.vocabulary

    @property
    def model(self):
        """What the run trains: a value of `OBJECTIVE_MODELS`, or `None` (a distillation)."""
        return OBJECTIVE_MODELS.get(self.config.objective)

    @property
    def description(self):
        return f"run {self.path} ({self.checkpoint})"

    @property
    def max_sequence_length(self):
        return presets.config(self.config.preset,
                              **self.config.config_overrides).max_sequence_length

    def build(self, dtype=None):
        """The model the run trained (a pretrainer), with the checkpoint's weights."""
        import tensorflow as tf

        if self.checkpoint is None:
            raise RunError(f"{self.path} has no checkpoint in {self.path}/checkpoints.")
        if self.model is None:
            raise RunError(f"{self.path} is a distillation run; its checkpoint holds the "
                           "teacher too. Export the student (--export_dir) and start from "
                           "that instead.")
        config = dataclasses.replace(self.config, precision=dtype or "float32")
        overrides = {"vocabulary_size": len(self.vocabulary), **config.config_overrides}
        model = pretraining_model(config, self.model, overrides)
        # The run saves tf.train.Checkpoint(model=list(model.variables)): the same list here.
        tf.train.Checkpoint(model=list(model.variables)).restore(
            self.checkpoint).expect_partial()
        return model

    def encoder(self, model):
        """The backbone that fine-tuning starts from, of the model `build()` gave."""
        return encoder_of(model, self.model)

    def tokenizer(self):
        """The run's tokenizer (WordPiece, SentencePiece or byte-level BPE, as the run learned
        or read it)."""
        return self._tokenizer


def read_run(path):
    """The `PretrainingRun` at `path`; a `RunError` naming the file when it is not one."""
    import tensorflow as tf

    from kbert.tokenizers import tokenizer_types

    path = os.fspath(path)
    values = _read_config(path)
    if (values.get("teacher") and values.get("tokenizer_type") == "auto"
            and not (values.get("vocab_file") or values.get("vocab"))):
        # A distilled student took its teacher's kind: the files it wrote say which (the
        # teacher may have moved since).
        values["tokenizer_type"] = tokenizer_types.type_of_folder(path)
    try:
        config = RunSettings.from_json(values)
        presets.get(config.preset)
    except (ValueError, TypeError) as e:
        raise RunError(f"{os.path.join(path, CONFIG_FILE)} is not the config.json of a kbert "
                       f"pretraining run: {e}") from None
    checkpoint = tf.train.latest_checkpoint(os.path.join(path, "checkpoints"))
    return PretrainingRun(path, config, checkpoint)
