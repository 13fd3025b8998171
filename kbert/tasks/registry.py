"""The one table of kbert's tasks: the `TaskRecord` of each task folder (`kbert/tasks/<task>/`,
its `TASK`), and the lookups every layer above reads (`kbert.tasks.build`, `kbert.pipeline`,
`tools/predict.py`, the Hugging Face task heads of
`kbert.convert`, fine-tuning's `--task`, the TFLite exports).

A name means one thing everywhere. Each task answers to its kbert name ("token_classifier"),
to the transformers pipeline names it serves ("token-classification") and to its aliases
("ner"); no name belongs to two tasks (checked when this module is imported). A pipeline
name opens that pipeline; any other name of a task opens its first pipeline.

"feature-extraction" is what it is in transformers: the backbone's hidden states, one vector
per token, from any model (every kbert model has a backbone). One pooled vector per text is
the `TextEmbedder`'s task, "text_embedder", served by the "sentence-embeddings" pipeline
(sentence-transformers' `encode`); "sentence-similarity" (the Hugging Face Hub's tag of
sentence-transformers models) is its alias.

The rules that live in the floors above (the pipeline classes, the SavedModel and TFLite
graphs, fine-tuning's data and scores in `kbert.training.finetuning_tasks`, the head weight
maps in `kbert.convert.task_heads`) are keyed by a record's names, and each of those tables
is built from this one: a record names what they must hold, and they fail on import (or in
tests/tasks/test_registry.py) when they miss a task.
"""

from kbert.tasks.extractive_summarization import TASK as EXTRACTIVE_SUMMARIZER
from kbert.tasks.feature_extraction import TASK as BACKBONE
from kbert.tasks.fill_mask import TASK as MASKED_LM
from kbert.tasks.question_answering import TASK as QUESTION_ANSWERER
from kbert.tasks.record import EXPORTS, TaskRecord
from kbert.tasks.text_classification import TASK as TEXT_CLASSIFIER
from kbert.tasks.text_embedding import TASK as TEXT_EMBEDDER
from kbert.tasks.token_classification import TASK as TOKEN_CLASSIFIER

__all__ = ["BACKBONE", "EXPORTS", "EXTRACTIVE_SUMMARIZER", "MASKED_LM", "QUESTION_ANSWERER", "RECORDS", "TEXT_CLASSIFIER",
           "TEXT_EMBEDDER", "TOKEN_CLASSIFIER", "TaskRecord", "finetuning_tasks", "get",
           "hugging_face_tasks", "names", "of_model", "pipeline_names", "pipeline_task",
           "task_models"]

# The table. Order matters where a model could match two records: task models first.
RECORDS = {record.name: record for record in (
    TEXT_CLASSIFIER, TOKEN_CLASSIFIER, QUESTION_ANSWERER, TEXT_EMBEDDER, EXTRACTIVE_SUMMARIZER,
    MASKED_LM, BACKBONE)}


def _index():
    index = {}
    for record in RECORDS.values():
        for name in record.names:
            if name in index:
                raise TypeError(f"The task name {name!r} is taken by {index[name].name} and "
                                f"{record.name}: a name means one task.")
            index[name] = record
    return index


_BY_NAME = _index()


def names():
    """Every task name: kbert's, the pipelines', the aliases (table order)."""
    return tuple(_BY_NAME)


def get(name):
    """The record of a task name (any of `names()`); ValueError listing them for others."""
    record = _BY_NAME.get(name) if isinstance(name, str) else None
    if record is None:
        raise ValueError(f"Unknown task {name!r}. Known: {', '.join(_BY_NAME)}.")
    return record


def pipeline_task(name):
    """The pipeline that a task name opens: itself for a pipeline name, an alias's pipeline,
    or the first pipeline of the task a kbert name names ("text_classifier" ->
    "text-classification")."""
    record = get(name)
    if name in record.pipelines:
        return name
    return record.aliases.get(name, record.pipelines[0])


def pipeline_names(export=None):
    """Every pipeline name, in table order; with `export` ("saved_model" or "tflite") only
    those of tasks that export to it."""
    if export is not None and export not in EXPORTS:
        raise ValueError(f"Unknown export {export!r}. Allowed: {', '.join(EXPORTS)}.")
    return tuple(p for r in RECORDS.values() if export is None or export in r.exports
                 for p in r.pipelines)


def task_models():
    """The records of the tasks with a model class of their own (`kbert.tasks.build`)."""
    return tuple(r for r in RECORDS.values() if r.model is not None)


def finetuning_tasks():
    """The records `tools/finetune.py --task` takes."""
    return tuple(r for r in RECORDS.values() if r.finetuning)


def hugging_face_tasks():
    """The names of the tasks with a fine-tuned transformers class (`*For<Task>`)."""
    return tuple(r.name for r in RECORDS.values() if r.hf_class is not None)


def of_model(model):
    """The record of a kbert model object (a task model, a pretrainer with a masked-LM
    head, a backbone), or `None` for anything else."""
    return next((r for r in RECORDS.values() if r.holds(model)), None)
