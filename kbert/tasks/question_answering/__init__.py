"""Extractive question answering (SQuAD): the task model (`model.py`) and its record."""

from kbert.tasks.question_answering.model import QuestionAnswerer
from kbert.tasks.record import TaskRecord

TASK = TaskRecord(
    name="question_answerer",
    summary="an answer as a span of the context: extractive, SQuAD",
    pipelines=("question-answering",),
    model=QuestionAnswerer, hf_class="ForQuestionAnswering",
    hf_head_prefixes=("qa_outputs.",), finetuning=True)

__all__ = ["QuestionAnswerer", "TASK"]
