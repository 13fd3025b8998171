"""Extractive question answering (SQuAD): the task model (`model.py`) and its record.

The folder's other modules are imported by their users (this one imports no TensorFlow):
`data.py` (records, SQuAD JSON and TFDS readers), `features.py` (windows and model inputs),
`decode.py` (logits back to answers: one span search for run_squad.py's and transformers'
rules, and the host side of the TFLite answerer), `metrics.py`
(SQuAD exact match and F1), `windows_graph.py` (the windows in the graph),
`pipeline_serving.py` (the pipeline's SavedModel, transformers' contract),
`tflite.py` (the TFLite graph) and `finetuning.py` (`tools/finetune.py`'s hooks).
"""

from kbert.tasks.question_answering.model import QuestionAnswerer
from kbert.tasks.record import TaskRecord

TASK = TaskRecord(
    name="question_answerer",
    summary="an answer as a span of the context: extractive, SQuAD",
    pipelines=("question-answering",),
    model=QuestionAnswerer, preprocessed=True, hf_class="ForQuestionAnswering",
    hf_head_prefixes=("qa_outputs.",), finetuning=True, package=__name__)

__all__ = ["QuestionAnswerer", "TASK"]
