"""Fill-mask: the likeliest tokens at `[MASK]`, from a pretrainer's masked-LM head (no task
model of its own: `kbert.models.build(head="mlm")`). Its record."""

from kbert.tasks.record import TaskRecord

TASK = TaskRecord(
    name="masked_lm",
    summary="the likeliest tokens at masks, from a pretrainer's masked-LM head",
    pipelines=("fill-mask",), model_head="mlm", package=__name__)

__all__ = ["TASK"]
