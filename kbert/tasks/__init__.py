"""The tasks: a folder each (`kbert/tasks/<task>/`: its record, its task model on any kbert
backbone in keras.ops only, its data, decoding, metrics, serving graphs and fine-tuning
hooks), and the one table of task names (`kbert.tasks.registry`: a `TaskRecord` per task).
`import kbert.tasks` imports the records and models only: no TensorFlow."""

from kbert.tasks import registry
from kbert.tasks._heads import ClassificationHead, TokenPooling
from kbert.tasks.extractive_summarization import ExtractiveSummarizer
from kbert.tasks.question_answering import QuestionAnswerer
from kbert.tasks.question_answering.model import SpanLogits
from kbert.tasks.record import TaskRecord
from kbert.tasks.task import Task, family_of
from kbert.tasks.text_classification import EarlyExitClassifier, ExitHead, TextClassifier
from kbert.tasks.text_embedding import TextEmbedder, cosine_similarity, semantic_search
from kbert.tasks.token_classification import TokenClassifier

# The task models by kbert's name, and every other name of theirs (transformers' pipeline names
# and aliases) -> kbert's name: views of the one table, `kbert.tasks.registry`.
TASKS = {record.name: record.model for record in registry.task_models()}
ALIASES = {name: record.name for record in registry.task_models() for name in record.names[1:]}


def build(task, backbone, **kwargs):
    """The task model `task` on `backbone`: a kbert name ("text_classifier",
    "token_classifier", "question_answerer", "text_embedder") or another name of the task in
    `kbert.tasks.registry` ("text-classification", "ner", "sentence-embeddings", ...);
    `kwargs` go to its class, e.g. `num_classes=3`.

    "feature-extraction" (the backbone's hidden states) and "fill-mask" (a masked-LM
    pretrainer) name tasks without a task model: ValueError saying what serves them.

    Example:
        ```python
        backbone = kbert.convert.load("path/to/bert", head=None)
        classifier = kbert.tasks.build("text_classifier", backbone, num_classes=2)
        ```
    """
    return registry.get(task).build(backbone, **kwargs)


def task_name(task):
    """kbert's name of `task` (any name of `kbert.tasks.registry`): "ner" ->
    "token_classifier", "feature-extraction" -> "backbone"; ValueError listing the names for
    an unknown one."""
    return registry.get(task).name


__all__ = [
    "ALIASES", "ClassificationHead", "EarlyExitClassifier", "ExitHead", "ExtractiveSummarizer", "QuestionAnswerer", "SpanLogits", "TASKS", "Task",
    "TaskRecord", "TextClassifier", "TextEmbedder", "TokenClassifier", "TokenPooling", "build",
    "cosine_similarity", "family_of", "registry", "semantic_search", "task_name",
]
