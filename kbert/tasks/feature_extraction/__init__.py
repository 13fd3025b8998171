"""Feature extraction: the backbone's hidden states, one vector per token, from any model
(every kbert model has a backbone; no task model of its own). Its record."""

from kbert.tasks.record import TaskRecord

TASK = TaskRecord(
    name="backbone",
    summary="the backbone's hidden states, one vector per token",
    pipelines=("feature-extraction",), model_head=None, package=__name__)

__all__ = ["TASK"]
