"""Extractive summarization (BERTSum): a score per sentence of a document, the best sentences
with trigram blocking as its summary. The task model (`model.py`) and its record; data and
layout (`data.py`, `features.py`), the greedy ROUGE oracle (`oracle.py`), decoding
(`decode.py`), ROUGE (`metrics.py`), fine-tuning hooks and serving graphs."""

from kbert.tasks.extractive_summarization.model import ExtractiveSummarizer
from kbert.tasks.record import TaskRecord

TASK = TaskRecord(
    name="extractive_summarizer",
    summary="the best sentences of a document as its summary, with their scores and offsets",
    pipelines=("summarization",), model=ExtractiveSummarizer, finetuning=True,
    exports=("saved_model",), package=__name__)

__all__ = ["TASK", "ExtractiveSummarizer"]
