"""Token classification (NER, POS tagging): the task model (`model.py`) and its record."""

from kbert.tasks.token_classification.model import TokenClassifier
from kbert.tasks.record import TaskRecord

TASK = TaskRecord(
    name="token_classifier",
    summary="a tag per word: NER, POS",
    pipelines=("token-classification",),
    aliases={"ner": "token-classification"},
    model=TokenClassifier, preprocessed=True, labelled=True,
    hf_class="ForTokenClassification",
    hf_head_prefixes=("classifier.",), finetuning=True, package=__name__)

__all__ = ["TASK", "TokenClassifier"]
