"""Sentence and sentence-pair classification and regression (GLUE), and zero-shot
classification with an NLI model: the task model (`model.py`) and its record."""

from kbert.tasks.text_classification.early_exit import EarlyExitClassifier, ExitHead
from kbert.tasks.text_classification.model import TextClassifier
from kbert.tasks.record import TaskRecord

TASK = TaskRecord(
    name="text_classifier",
    summary="a class or a score per text or text pair, also zero-shot with an NLI model",
    pipelines=("text-classification", "zero-shot-classification"),
    aliases={"sentiment-analysis": "text-classification"},
    model=TextClassifier, preprocessed=True, labelled=True,
    hf_class="ForSequenceClassification",
    hf_head_prefixes=("classifier.", "pre_classifier."), finetuning=True,
    package=__name__)

__all__ = ["TASK", "EarlyExitClassifier", "ExitHead", "TextClassifier"]
