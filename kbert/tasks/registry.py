"""The one table of kbert's tasks: a `TaskRecord` per task, and the lookups every layer above
reads (`kbert.tasks.build`, `kbert.pipeline`, `tools/predict.py`, the Hugging Face task heads of
`kbert.convert`, fine-tuning's `--task`, the TFLite exports).

A name means one thing everywhere. Each task answers to its kbert name ("token_classifier"),
to the transformers pipeline names it serves ("token-classification") and to its aliases
("ner"); no name belongs to two tasks (checked when this module is imported). A pipeline
name opens that pipeline; any other name of a task opens its first pipeline.

"feature-extraction" is what it is in transformers: the backbone's hidden states, one vector
per token, from any model (every kbert model has a backbone). One pooled vector per text is
the `TextEmbedder`'s task, "text_embedder", served by the "sentence-embeddings" pipeline
(sentence-transformers' `encode`); "sentence-similarity" (the Hugging Face Hub's tag of
sentence-transformers models) is its alias. Before this table `kbert.tasks.build` took
"feature-extraction" for the embedder while `kbert.pipeline` took it for hidden states; the
embedder no longer answers to it.

The rules that live in the floors above (the pipeline classes, the SavedModel and TFLite
graphs, fine-tuning's data and scores in `kbert.training.finetuning_tasks`, the head weight
maps in `kbert.convert.task_heads`) are keyed by a record's names, and each of those tables
is built from this one: a record names what they must hold, and they fail on import (or in
tests/tasks/test_registry.py) when they miss a task.
"""

import dataclasses
from collections.abc import Mapping
from typing import Optional

from kbert import models
from kbert.tasks.question_answerer import QuestionAnswerer
from kbert.tasks.text_classifier import TextClassifier
from kbert.tasks.text_embedder import TextEmbedder
from kbert.tasks.token_classifier import TokenClassifier

EXPORTS = ("saved_model", "tflite")


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False)
class TaskRecord:
    """One task: its names, its model, and what the layers above need to know of it.

    (Not named `Task`: `kbert.tasks.Task` is the mixin every task model extends.)

    Attributes:
        name: kbert's name ("text_classifier"); for a task without a model class of its
            own, the kind of model that serves it ("masked_lm", "backbone").
        summary: what the task gives, for messages and flag help (no parentheses).
        pipelines: the transformers pipeline names it serves (`kbert.pipeline`); the first
            is the one its other names open.
        aliases: other name -> the pipeline of `pipelines` it names ("ner" ->
            "token-classification", as in transformers).
        model: the task model class (`kbert.tasks`), or `None` where a pretrained model
            serves the task as it is.
        model_head: for `model=None`: the `head` of `kbert.models.build` / `presets.load`
            that gives the model ("mlm": a masked-LM pretrainer; `None`: the backbone).
        labelled: its outputs have names (`label_names`, config.json's `id2label`).
        exports: what it exports to: "saved_model" (`export_saved_model`,
            `pipeline.export`) and "tflite" (`export_tflite`, `pipeline.export_tflite`).
        hf_class: the end of transformers' class of the fine-tuned task model
            ("ForSequenceClassification"; each family's record in `kbert.convert` names
            the whole class), or `None` where transformers has no `*For<Task>` class (the
            embedder is a sentence-transformers folder around the base model).
        hf_head_prefixes: the names of the head's weights in Hugging Face files, outside
            the encoder's prefix ("classifier.").
        finetuning: `tools/finetune.py --task` takes it; its data, batches and scores are
            `kbert.training.finetuning_tasks.FINETUNING_TASKS[name]`.
    """

    name: str
    summary: str
    pipelines: tuple
    aliases: Mapping = dataclasses.field(default_factory=dict)
    model: Optional[type] = None
    model_head: Optional[str] = None
    labelled: bool = False
    exports: tuple = EXPORTS
    hf_class: Optional[str] = None
    hf_head_prefixes: tuple = ()
    finetuning: bool = False

    def __post_init__(self):
        wrong = {a: p for a, p in self.aliases.items() if p not in self.pipelines}
        if not self.pipelines or wrong:
            raise TypeError(f"{self.name}: aliases must name one of its pipelines "
                            f"{self.pipelines}, not {wrong}.")
        if set(self.exports) - set(EXPORTS):
            raise TypeError(f"{self.name}: exports are among {EXPORTS}, not {self.exports}.")
        if self.model is None and (self.model_head not in models.HEADS or self.finetuning
                                   or self.hf_class or self.labelled):
            raise TypeError(f"{self.name}: a task without a model class needs a model_head "
                            f"of {models.HEADS}, and has no fine-tuning, labels or "
                            "Hugging Face class.")

    @property
    def names(self):
        """Every name it answers to: kbert's, its pipelines', its aliases."""
        return (self.name, *self.pipelines, *self.aliases)

    @property
    def serves(self):
        """The pipelines a model of this task runs: its own, and feature-extraction through
        its backbone."""
        return (*self.pipelines, *(p for p in BACKBONE.pipelines if p not in self.pipelines))

    def describe(self):
        """"token_classifier (token-classification, ner)": the names it answers to."""
        return f"{self.name} ({', '.join(self.names[1:])})"

    def holds(self, model):
        """Whether `model` (a kbert model object) is a model of this task."""
        if self.model is not None:
            return isinstance(model, self.model)
        if self.model_head == "mlm":  # any pretrainer with a masked-LM output
            inputs = getattr(model, "input", None)
            outputs = getattr(model, "output", None)
            return isinstance(inputs, dict) and "mask_positions" in inputs and \
                isinstance(outputs, dict) and "mlm_logits" in outputs
        return isinstance(model, models.Backbone)

    def build(self, backbone, **kwargs):
        """The task model on `backbone`; `kwargs` go to its class (`num_classes=3`)."""
        if self.model is None:
            how = ("kbert.models.build(family, config, head='mlm') or "
                   "kbert.presets.load(name, head='mlm')" if self.model_head == "mlm"
                   else "the backbone itself (kbert.models.build(family, config, head=None))")
            raise ValueError(
                f"{self.pipelines[0]} ({self.name}) has no task model to build: it runs "
                f"{self.summary}, from {how}. For one embedding per text build "
                f"{TEXT_EMBEDDER.name!r} ({TEXT_EMBEDDER.pipelines[0]!r}).")
        return self.model(backbone, **kwargs)


TEXT_CLASSIFIER = TaskRecord(
    name="text_classifier",
    summary="a class or a score per text or text pair, also zero-shot with an NLI model",
    pipelines=("text-classification", "zero-shot-classification"),
    aliases={"sentiment-analysis": "text-classification"},
    model=TextClassifier, labelled=True, hf_class="ForSequenceClassification",
    hf_head_prefixes=("classifier.", "pre_classifier."), finetuning=True)
TOKEN_CLASSIFIER = TaskRecord(
    name="token_classifier",
    summary="a tag per word: NER, POS",
    pipelines=("token-classification",),
    aliases={"ner": "token-classification"},
    model=TokenClassifier, labelled=True, hf_class="ForTokenClassification",
    hf_head_prefixes=("classifier.",), finetuning=True)
QUESTION_ANSWERER = TaskRecord(
    name="question_answerer",
    summary="an answer as a span of the context: extractive, SQuAD",
    pipelines=("question-answering",),
    model=QuestionAnswerer, hf_class="ForQuestionAnswering",
    hf_head_prefixes=("qa_outputs.",), finetuning=True)
TEXT_EMBEDDER = TaskRecord(
    name="text_embedder",
    summary="one embedding per text, as sentence-transformers",
    pipelines=("sentence-embeddings",),
    aliases={"sentence-similarity": "sentence-embeddings"},
    model=TextEmbedder)
MASKED_LM = TaskRecord(
    name="masked_lm",
    summary="the likeliest tokens at masks, from a pretrainer's masked-LM head",
    pipelines=("fill-mask",), model_head="mlm")
BACKBONE = TaskRecord(
    name="backbone",
    summary="the backbone's hidden states, one vector per token",
    pipelines=("feature-extraction",), model_head=None)

# The table. Order matters where a model could match two records: task models first.
RECORDS = {record.name: record for record in (
    TEXT_CLASSIFIER, TOKEN_CLASSIFIER, QUESTION_ANSWERER, TEXT_EMBEDDER, MASKED_LM, BACKBONE)}


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
