"""A tools/pretrain.py run directory as a model source: its config.json, vocabulary and newest
checkpoint. Distillation takes a run as its teacher; fine-tuning starts from a run's encoder."""

import dataclasses
import functools
import json
import os
from typing import Optional

import tensorflow as tf

from kbert.tokenizers import tokenizer_types
from kbert.training.objectives import OBJECTIVES
from kbert.training.pretraining_config import PretrainingConfig
from kbert.training.config_fields import ConfigError

# config.json of runs made before the fields were renamed: old name -> current name.
_RENAMED = {"vocab": "vocab_file", "vocab_size": "learned_vocabulary_size"}


def is_run(path):
    """Whether `path` is a pretraining run's model_dir (config.json and checkpoints/)."""
    return (os.path.isdir(os.path.join(path, "checkpoints"))
            and os.path.exists(os.path.join(path, "config.json")))


@dataclasses.dataclass
class PretrainingRun:
    """A pretraining run: `build()` gives its model with the newest checkpoint's weights."""

    path: str
    config: PretrainingConfig
    checkpoint: Optional[str]  # None before the run's first loop ended

    @property
    def tokenizer_type(self):
        return self.config.resolved_tokenizer_type

    @functools.cached_property
    def _tokenizer(self):
        kind = tokenizer_types.get(self.tokenizer_type)
        path = self.config.vocab_file or os.path.join(self.path, kind.file_name)
        if not tf.io.gfile.exists(path):
            raise ConfigError(f"{self.path} is a run without its vocabulary: {path} does not "
                              "exist.")
        return tokenizer_types.load(path, kind.name, lowercase=self.config.resolved_lowercase)

    @property
    def vocabulary(self):
        return self._tokenizer.vocabulary

    @property
    def objective(self):
        return OBJECTIVES[self.config.objective]

    @property
    def description(self):
        return f"run {self.path} ({self.checkpoint})"

    def build(self, dtype=None):
        """The model the run trained (a pretrainer), with the checkpoint's weights."""
        if self.checkpoint is None:
            raise ConfigError(f"{self.path} has no checkpoint in {self.path}/checkpoints.")
        if self.objective.needs_teacher:
            raise ConfigError(f"{self.path} is a distillation run; its checkpoint holds the "
                              "teacher too. Export the student (--export_dir) and start from "
                              "that instead.")
        config = dataclasses.replace(self.config, precision=dtype or "float32")
        overrides = {"vocabulary_size": len(self.vocabulary), **config.config_overrides}
        model = self.objective.build(config, overrides)
        # The run saves tf.train.Checkpoint(model=list(model.variables)): the same list here.
        tf.train.Checkpoint(model=list(model.variables)).restore(
            self.checkpoint).expect_partial()
        return model

    def tokenizer(self):
        """The run's tokenizer (WordPiece, SentencePiece or byte-level BPE, as the run learned
        or read it)."""
        return self._tokenizer


def read_run(path):
    """The `PretrainingRun` at `path`; a `ConfigError` naming the file when it is not one."""
    config_path = os.path.join(path, "config.json")
    try:
        with open(config_path, encoding="utf-8") as f:
            values = json.load(f)
        values = {_RENAMED.get(k, k): v for k, v in values.items()}
        # Runs made before `tokenizer_type` existed all learned or read WordPiece.
        values.setdefault("tokenizer_type", "wordpiece")
        if (values.get("teacher") and values["tokenizer_type"] == "auto"
                and not values.get("vocab_file")):
            # A distilled student took its teacher's kind: the files it wrote say which (the
            # teacher may have moved since).
            values["tokenizer_type"] = tokenizer_types.type_of_folder(path)
        config = PretrainingConfig(**values)
    except (OSError, ValueError, TypeError) as e:
        raise ConfigError(f"{config_path} is not the config.json of a kbert pretraining run: "
                          f"{e}") from None
    checkpoint = tf.train.latest_checkpoint(os.path.join(path, "checkpoints"))
    return PretrainingRun(str(path), config, checkpoint)
