"""The record type of a kbert task: `TaskRecord`. Each task folder (`kbert/tasks/<task>/`)
defines its own, `TASK`; `kbert.tasks.registry` is the one table of them and the lookups every
layer above reads."""

import dataclasses
import importlib
from collections.abc import Mapping
from typing import Optional

from kbert import models

# What every model serves through its backbone: the backbone's hidden states
# (kbert/tasks/feature_extraction's record).
FEATURE_EXTRACTION_PIPELINES = ("feature-extraction",)
EXPORTS = ("saved_model", "tflite")
# The modules of a task folder that the floors above reach through its record, by role (see
# `TaskRecord.module`). Each holds a table of the task's pipelines, `PIPELINES`, where the
# pipelines export there.
ROLES = {
    "pipeline_serving": "`pipeline.export`'s SavedModel endpoints: `PIPELINES`",
    "tflite": "the pipelines' TFLite graphs: `PIPELINES`",
    "finetuning": "tools/finetune.py's hooks",
    "preprocessor": "the task model's preprocessor layer (raw inputs in `fit` and `predict`): "
                    "its class, named by `PREPROCESSOR`",
}


@dataclasses.dataclass(frozen=True)
class Flag:
    """One flag of tools/finetune.py that a task folder owns: a field of
    `kbert.training.FinetuningConfig`, which composes each fine-tuning task's `FLAGS`
    ({name: Flag}) from its folder's `finetuning` module (the folder checks them in its
    `check(config)`).

    Attributes:
        kind: the field's type (`int`, `str`, `float`, `Optional[int]`, ...).
        default: its value when the flag is not given.
        help: one line that names the allowed values.
        group: the flag's group in --help ("Data" or "Model").
        choices: the allowed values of a string flag.
        minimum: the smallest allowed number (None is always allowed).
    """

    kind: object
    default: object
    help: str
    group: str = "Data"
    choices: Optional[tuple] = None
    minimum: Optional[float] = None


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
        exports: what its pipelines export to (`kbert.export`): "saved_model" (its folder's
            `pipeline_serving`) and "tflite" (its folder's `tflite`).
        hf_class: the end of transformers' class of the fine-tuned task model
            ("ForSequenceClassification", after each family's `hf_name` in
            `kbert.convert`), or `None` where transformers has no `*For<Task>` class (the
            embedder is a sentence-transformers folder around the base model).
        hf_head_prefixes: the names of the head's weights in Hugging Face files, outside
            the encoder's prefix ("classifier.").
        finetuning: `tools/finetune.py --task` takes it; its hooks are its folder's
            `finetuning` module, run by `kbert.training.finetuning_tasks`.
        preprocessed: its model takes raw inputs through a preprocessor layer, its folder's
            `preprocessor` module (`kbert.tasks.preprocessor`).
        package: the task folder (`kbert.tasks.<task>`, its `__name__`), whose modules of
            each role in `ROLES` the floors above reach through `module`.
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
    preprocessed: bool = False
    package: Optional[str] = None

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

    def module(self, role):
        """The task folder's module `role` (a key of `ROLES`: "pipeline_serving", "tflite", ...),
        imported on first use: those import TensorFlow, the record does not. LookupError
        naming the task and the module where the folder has none."""
        if role not in ROLES:
            raise ValueError(f"Unknown task module role {role!r}. Allowed: "
                             f"{', '.join(ROLES)}.")
        if self.package is None:
            raise LookupError(f"The task {self.describe()} names no folder (package=None): "
                              f"it has no {role} module ({ROLES[role]}).")
        where = f"{self.package}.{role}"
        try:
            return importlib.import_module(where)
        except ModuleNotFoundError as e:
            if e.name != where:  # a missing module inside it: its own error
                raise
            raise LookupError(f"The task {self.describe()} has no {role} module ({where}: "
                              f"{ROLES[role]}).") from None

    def pipeline_export(self, pipeline, export):
        """What exports the pipeline `pipeline` (one of `pipelines`) to `export` ("saved_model":
        `pipeline.export`; "tflite": `pipeline.export_tflite`): its folder's function of
        (pipe, model, opts, given) -> the endpoints. LookupError where it has none."""
        if export not in EXPORTS:
            raise ValueError(f"Unknown export {export!r}. Allowed: {', '.join(EXPORTS)}.")
        if pipeline not in self.pipelines:
            raise LookupError(f"{pipeline!r} is no pipeline of the task {self.describe()}.")
        if export not in self.exports:
            raise LookupError(f"The task {self.describe()} does not export to {export}; it "
                              f"exports to {', '.join(self.exports) or 'nothing'}.")
        module = self.module("pipeline_serving" if export == "saved_model" else "tflite")
        function = getattr(module, "PIPELINES", {}).get(pipeline)
        if function is None:
            raise LookupError(f"{module.__name__}.PIPELINES has no {pipeline!r} (the task "
                              f"{self.name} says it exports to {export}).")
        return function

    def preprocessor(self, tokenizer, **kwargs):
        """The preprocessor layer of this task's model on `tokenizer` (`kwargs`: its
        `sequence_length`, ...); LookupError where the task has none."""
        module = self.module("preprocessor")
        return getattr(module, module.PREPROCESSOR)(tokenizer, **kwargs)

    @property
    def names(self):
        """Every name it answers to: kbert's, its pipelines', its aliases."""
        return (self.name, *self.pipelines, *self.aliases)

    @property
    def serves(self):
        """The pipelines a model of this task runs: its own, and feature-extraction through
        its backbone."""
        return (*self.pipelines,
                *(p for p in FEATURE_EXTRACTION_PIPELINES if p not in self.pipelines))

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
                "'text_embedder' ('sentence-embeddings').")
        return self.model(backbone, **kwargs)
