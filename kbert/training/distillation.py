"""The teacher of `--objective=distill`: a kbert run, a preset or any checkpoint kbert reads."""

import dataclasses
import json
import os

import tensorflow as tf

from kbert import presets
from kbert.training.objectives import OBJECTIVES
from kbert.training.pretraining_config import PretrainingConfig
from kbert.training.run_config import ConfigError


@dataclasses.dataclass
class TeacherSource:
    """Where a teacher comes from: its vocabulary now, its model later (inside a strategy)."""

    description: str
    vocabulary: list
    lowercase: bool
    build: object  # dtype -> a pretrainer with a masked-LM head


def _from_run(path, run_config):
    """A kbert pretraining run's model_dir: its config.json, vocab.txt and newest checkpoint."""
    from kbert.tokenizers.word_piece_tokenizer import read_vocabulary

    config = PretrainingConfig(**_current_names(run_config))
    objective = OBJECTIVES[config.objective]
    if objective.families or objective.needs_teacher:
        masked_lm = [o.name for o in OBJECTIVES.values()
                     if not (o.families or o.needs_teacher)]
        raise ConfigError(f"--teacher={path}: that run trained --objective={config.objective}; "
                          f"a teacher must be a masked-LM run ({', '.join(masked_lm)}).")
    checkpoint = tf.train.latest_checkpoint(os.path.join(path, "checkpoints"))
    if checkpoint is None:
        raise ConfigError(f"--teacher={path} has no checkpoint in {path}/checkpoints.")
    vocabulary = read_vocabulary(config.vocab_file or os.path.join(path, "vocab.txt"))

    def build(dtype):
        model = objective.build(dataclasses.replace(config, precision=dtype or "float32"),
                                {"vocabulary_size": len(vocabulary), **config.config_overrides})
        tf.train.Checkpoint(model=list(model.variables)).restore(checkpoint).expect_partial()
        return model

    return TeacherSource(f"run {path} ({checkpoint})", vocabulary, config.lowercase, build)


_SENTENCEPIECE = ("its tokenizer is SentencePiece (ALBERT); the pretraining pipeline "
                  "tokenizes with WordPiece only, so it cannot be a teacher yet.")


# config.json of runs made before the fields were renamed: old name -> current name.
_RENAMED = {"vocab": "vocab_file", "vocab_size": "learned_vocabulary_size"}


def _current_names(run_config):
    return {_RENAMED.get(key, key): value for key, value in run_config.items()}


def teacher_source(spec):
    """The `TeacherSource` of `--teacher`: a kbert run's model_dir, a preset name (its
    pretrained release) or a checkpoint directory (Hugging Face, TF1, keras-hub, kbert)."""
    from kbert import convert

    run_config = os.path.join(spec, "config.json")
    if os.path.isdir(os.path.join(spec, "checkpoints")) and os.path.exists(run_config):
        with open(run_config, encoding="utf-8") as f:
            return _from_run(spec, json.load(f))
    if spec in presets.list():
        if presets.get(spec)["tokenizer"].get("type") == "sentencepiece":
            raise ConfigError(f"--teacher={spec}: {_SENTENCEPIECE}")  # before any download
        tokenizer = presets.load_tokenizer(spec)
        return TeacherSource(f"preset {spec}", tokenizer.vocabulary, tokenizer.lowercase,
                             lambda dtype: presets.load(spec, head="mlm", dtype=dtype))
    try:
        checkpoint = convert.read(spec)
    except (FileNotFoundError, ValueError) as e:
        raise ConfigError(
            f"--teacher={spec!r}: not a kbert run (model_dir with config.json and "
            f"checkpoints/), a preset ({', '.join(presets.list())}) or a checkpoint: {e}"
        ) from None
    if checkpoint.sentencepiece_model is not None:
        raise ConfigError(f"--teacher={spec}: {_SENTENCEPIECE}")
    if checkpoint.vocabulary is None:
        raise ConfigError(f"--teacher={spec}: the checkpoint has no vocab.txt.")
    return TeacherSource(f"checkpoint {spec}", checkpoint.vocabulary, checkpoint.lowercase,
                         lambda dtype: checkpoint.build(head="mlm", dtype=dtype))
