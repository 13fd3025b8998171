"""The pretrained encoder a fine-tuning run starts from (one or several tasks): its tokenizer
now, its backbone later, from `--preset` or `--checkpoint`."""

import dataclasses

from kbert import loading
from kbert.training.config_fields import ConfigError


@dataclasses.dataclass
class PretrainedEncoder:
    """Where the pretrained encoder comes from: its tokenizer now, its backbone later (built
    inside the strategy's scope)."""

    description: str
    tokenizer: object
    max_sequence_length: int
    backbone: object  # dtype -> a kbert backbone with pretrained weights


def encoder_source(config):
    """The `PretrainedEncoder` of `--preset` or `--checkpoint` (a tools/pretrain.py or
    tools/finetune.py run, or any checkpoint kbert reads), as `kbert.loading.source` finds
    it."""
    overrides = config.config_overrides
    spec = config.preset if config.preset is not None else config.checkpoint
    try:
        found = loading.source(spec)
    except (FileNotFoundError, ValueError) as e:
        if config.preset is not None:  # the preset's own errors, as presets.load raises them
            raise
        raise ConfigError(f"--checkpoint={config.checkpoint!r}: {e}") from None
    if found.kind == "saved_model":
        raise ConfigError(f"--checkpoint={spec}: a SavedModel runs as it was exported; "
                          "fine-tuning starts from a checkpoint directory or a run.")
    if found.kind == "pretraining_run" and overrides:
        raise ConfigError("--config_override: a tools/pretrain.py run is rebuilt from its "
                          "own config.json; it takes no overrides.")
    return PretrainedEncoder(found.description, found.tokenizer(), found.max_sequence_length,
                             lambda dtype: found.build(head=None, dtype=dtype, **overrides))
