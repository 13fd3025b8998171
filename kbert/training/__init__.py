"""Training glue: optimizers and schedules, strategies, callbacks, the pretraining loop."""

from kbert.training.optimizers import WarmupSchedule, create_optimizer
from kbert.training.strategies import create_strategy, find_tpu

__all__ = ["ConfigError", "PretrainingConfig", "WarmupSchedule", "create_optimizer",
           "create_strategy", "find_tpu", "run_pretraining"]


def __getattr__(name):
    # The pretraining loop pulls in kbert.data and tensorflow-text: load it on first use.
    if name in ("ConfigError", "PretrainingConfig", "run_pretraining"):
        from kbert.training import pretraining

        return getattr(pretraining, name)
    raise AttributeError(f"module 'kbert.training' has no attribute {name!r}")
