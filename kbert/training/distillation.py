"""The teacher of `--objective=distill`: a kbert run, a preset or any checkpoint kbert reads."""

import dataclasses

from kbert import loading, presets
from kbert.training.objectives import OBJECTIVES
from kbert.training.config_fields import ConfigError


@dataclasses.dataclass
class TeacherSource:
    """Where a teacher comes from: its tokenizer now (the student's, of any kind), its model
    later (inside a strategy)."""

    description: str
    tokenizer: object  # a kbert WordPiece, SentencePiece or byte-level BPE tokenizer
    lowercase: bool
    build: object  # dtype -> a pretrainer with a masked-LM head

    @property
    def tokenizer_type(self):
        return tokenizer_type_of(self.tokenizer)


def tokenizer_type_of(tokenizer):
    """The `kbert.tokenizers.tokenizer_types` name of a kbert tokenizer object."""
    return tokenizer.tokenizer_type


def _from_run(spec, found):
    """A kbert pretraining run's model_dir: its config.json, vocabulary and newest checkpoint."""
    run = found.run
    objective = OBJECTIVES[run.config.objective]
    if objective.families or objective.needs_teacher:
        masked_lm = [o.name for o in OBJECTIVES.values()
                     if not (o.families or o.needs_teacher)]
        raise ConfigError(f"--teacher={spec}: that run trained --objective={run.config.objective}"
                          f"; a teacher must be a masked-LM run ({', '.join(masked_lm)}).")
    if run.checkpoint is None:
        raise ConfigError(f"--teacher={spec} has no checkpoint in {spec}/checkpoints.")
    return TeacherSource(found.description, found.tokenizer(), run.config.resolved_lowercase,
                         lambda dtype: found.build(dtype=dtype))


def teacher_source(spec):
    """The `TeacherSource` of `--teacher`: a kbert run's model_dir, a preset name (its
    pretrained release) or a checkpoint directory (Hugging Face, TF1, keras-hub, kbert), as
    `kbert.loading.source` finds it."""
    from kbert.convert import families

    try:
        found = loading.source(spec)
    except (FileNotFoundError, ValueError) as e:
        raise ConfigError(
            f"--teacher={spec!r}: not a kbert run (model_dir with config.json and "
            f"checkpoints/), a preset ({', '.join(presets.list())}) or a checkpoint: {e}"
        ) from None
    if found.kind == "pretraining_run":
        return _from_run(spec, found)
    if found.kind == "preset":
        tokenizer = found.tokenizer()
        return TeacherSource(found.description, tokenizer, tokenizer.lowercase,
                             lambda dtype: found.build(head="mlm", dtype=dtype))
    if found.kind == "saved_model":
        raise ConfigError(f"--teacher={spec}: a SavedModel runs as it was exported; a teacher "
                          "is trained beside its student: give its checkpoint directory.")
    checkpoint = found.checkpoint
    if checkpoint.vocabulary is None and checkpoint.sentencepiece_model is None:
        raise ConfigError(f"--teacher={spec}: the checkpoint has no tokenizer files (vocab.txt"
                          ", spiece.model or vocab.json + merges.txt).")
    # ELECTRA's pretraining heads are a smaller generator's: only a generator on its own
    # ("mlm") predicts masked tokens with the encoder that the student distils.
    usable = ("mlm",) if families.get(checkpoint.family).companion else ("mlm", "pretrainer")
    if checkpoint.head not in usable:
        raise ConfigError(
            f"--teacher={spec}: the checkpoint has no masked-LM head on its encoder (it has "
            f"{checkpoint.head or 'no head'}); a teacher must predict the masked tokens.")
    tokenizer = found.tokenizer()
    return TeacherSource(f"checkpoint {spec}", tokenizer, tokenizer.lowercase,
                         lambda dtype: found.build(head="mlm", dtype=dtype))
