"""Fine-tuning task models on any kbert backbone (keras.ops only: any Keras backend), and
the official metrics of their benchmarks (`kbert.tasks.metrics`, numpy only)."""

from kbert.tasks import metrics
from kbert.tasks._heads import ClassificationHead, SpanLogits, TokenPooling
from kbert.tasks.question_answerer import QuestionAnswerer
from kbert.tasks.task import Task, family_of
from kbert.tasks.text_classifier import TextClassifier
from kbert.tasks.text_embedder import TextEmbedder, cosine_similarity, semantic_search
from kbert.tasks.token_classifier import TokenClassifier

# Task name -> class. transformers' pipeline names are aliases.
TASKS = {
    "text_classifier": TextClassifier,
    "token_classifier": TokenClassifier,
    "question_answerer": QuestionAnswerer,
    "text_embedder": TextEmbedder,
}
ALIASES = {
    "text-classification": "text_classifier",
    "token-classification": "token_classifier",
    "ner": "token_classifier",
    "question-answering": "question_answerer",
    "feature-extraction": "text_embedder",
    "sentence-similarity": "text_embedder",
}


def build(task, backbone, **kwargs):
    """The task model `task` ("text_classifier", "token_classifier", "question_answerer",
    "text_embedder", or a transformers pipeline name such as "text-classification") on
    `backbone`; `kwargs` go to its class, e.g. `num_classes=3`.

    Example:
        backbone = kbert.convert.load("path/to/bert", head=None)
        classifier = kbert.tasks.build("text_classifier", backbone, num_classes=2)
    """
    return TASKS[task_name(task)](backbone, **kwargs)


def task_name(task):
    """kbert's name of `task`: a key of `TASKS`, or a transformers pipeline name in
    `ALIASES` ("text-classification", "ner", ...)."""
    name = ALIASES.get(task, task) if isinstance(task, str) else None
    if name not in TASKS:
        raise ValueError(f"Unknown task {task!r}. Known: {', '.join([*TASKS, *ALIASES])}.")
    return name


__all__ = [
    "ALIASES", "ClassificationHead", "QuestionAnswerer", "SpanLogits", "TASKS", "Task",
    "TextClassifier", "TextEmbedder", "TokenClassifier", "TokenPooling", "build",
    "cosine_similarity", "family_of", "metrics", "semantic_search",
]
