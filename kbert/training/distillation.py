"""The teacher of `--objective=distill`: a kbert run, a preset or any checkpoint kbert reads."""

import dataclasses

from kbert import presets
from kbert.training import runs
from kbert.training.objectives import OBJECTIVES
from kbert.training.run_config import ConfigError


@dataclasses.dataclass
class TeacherSource:
    """Where a teacher comes from: its vocabulary now, its model later (inside a strategy)."""

    description: str
    vocabulary: list
    lowercase: bool
    build: object  # dtype -> a pretrainer with a masked-LM head


def _from_run(path):
    """A kbert pretraining run's model_dir: its config.json, vocabulary and newest checkpoint."""
    run = runs.read_run(path)
    if run.objective.families or run.objective.needs_teacher:
        masked_lm = [o.name for o in OBJECTIVES.values()
                     if not (o.families or o.needs_teacher)]
        raise ConfigError(f"--teacher={path}: that run trained --objective={run.config.objective}"
                          f"; a teacher must be a masked-LM run ({', '.join(masked_lm)}).")
    if run.tokenizer_type != "wordpiece":
        raise ConfigError(f"--teacher={path}: its tokenizer is {run.tokenizer_type}; "
                          f"{_WORDPIECE_ONLY}")
    if run.checkpoint is None:
        raise ConfigError(f"--teacher={path} has no checkpoint in {path}/checkpoints.")
    return TeacherSource(run.description, run.vocabulary, run.config.resolved_lowercase, run.build)


_WORDPIECE_ONLY = ("distillation writes the teacher's vocabulary as the student's vocab.txt, "
                   "so a teacher must have a WordPiece vocabulary.")
_SENTENCEPIECE = f"its tokenizer is SentencePiece (ALBERT); {_WORDPIECE_ONLY}"
_BYTE_PAIR = f"its tokenizer is a byte-level BPE (RoBERTa); {_WORDPIECE_ONLY}"


def teacher_source(spec):
    """The `TeacherSource` of `--teacher`: a kbert run's model_dir, a preset name (its
    pretrained release) or a checkpoint directory (Hugging Face, TF1, keras-hub, kbert)."""
    from kbert import convert
    from kbert.convert import families

    if runs.is_run(spec):
        return _from_run(spec)
    if spec in presets.list():
        kind = presets.get(spec)["tokenizer"].get("type")
        if kind in ("sentencepiece", "bpe"):  # before any download
            raise ConfigError(f"--teacher={spec}: "
                              f"{_SENTENCEPIECE if kind == 'sentencepiece' else _BYTE_PAIR}")
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
    if checkpoint.merges is not None:
        raise ConfigError(f"--teacher={spec}: {_BYTE_PAIR}")
    if checkpoint.vocabulary is None:
        raise ConfigError(f"--teacher={spec}: the checkpoint has no vocab.txt.")
    # ELECTRA's pretraining heads are a smaller generator's: only a generator on its own
    # ("mlm") predicts masked tokens with the encoder that the student distils.
    usable = ("mlm",) if families.get(checkpoint.family).companion else ("mlm", "pretrainer")
    if checkpoint.head not in usable:
        raise ConfigError(
            f"--teacher={spec}: the checkpoint has no masked-LM head on its encoder (it has "
            f"{checkpoint.head or 'no head'}); a teacher must predict the masked tokens.")
    return TeacherSource(f"checkpoint {spec}", checkpoint.vocabulary, checkpoint.lowercase,
                         lambda dtype: checkpoint.build(head="mlm", dtype=dtype))
