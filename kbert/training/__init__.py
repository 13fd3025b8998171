"""Training runs: pretraining and fine-tuning (configs whose fields are the programs' flags),
optimizers and schedules, strategies, callbacks, layer-wise fine-tuning techniques."""

from kbert.models.optimizers import WarmupSchedule, create_optimizer
from kbert.training.strategies import create_strategy, find_tpu

__all__ = ["ConfigError", "FinetuningConfig", "PretrainingConfig", "WarmupSchedule",
           "create_optimizer", "create_strategy", "find_tpu", "run_finetuning",
           "run_pretraining"]

# The runs pull in kbert.data and tensorflow-text: load them on first use.
_LAZY = {"ConfigError": "config_fields", "PretrainingConfig": "pretraining_config",
         "run_pretraining": "pretraining", "FinetuningConfig": "finetuning_config",
         "run_finetuning": "finetuning"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"kbert.training.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'kbert.training' has no attribute {name!r}")
