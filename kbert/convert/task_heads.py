"""Fine-tuned checkpoints: which kbert task model a checkpoint holds, and its head's weights.

transformers saves a fine-tuned model as its family's `*For<Task>` class, named in
config.json's `architectures`, with the labels (`id2label`) and, for sequence classifiers,
the `problem_type`. Each family's record (`kbert.convert.families`) names its classes
(`task_architectures`) and its heads' dropout fields (`task_dropout`); the heads' weights have
the same names in every family, and kbert's task models are laid out like them:

    text_classifier    `classifier` (BERT, ALBERT, MobileBERT: on the pooled output),
                       DistilBERT's `pre_classifier` + `classifier`, ELECTRA's and
                       RoBERTa's `classifier.dense` + `classifier.out_proj` (a
                       `kbert.tasks.ClassificationHead`; DeBERTa-v3 names the same layers
                       `pooler.dense` + `classifier`: the family's `task_head_names`)
    token_classifier   `classifier`
    question_answerer  `qa_outputs`
    (ModernBERT's three put `head.dense` + `head.norm` before theirs, kbert's
    `prediction_head`, and call its reader's `qa_outputs` `classifier`: its
    `task_head_names`)
    text_embedder      none: sentence-transformers' pooling (`kbert.convert.hugging_face`
                       reads and writes its files)

transformers' token classifiers and readers have no pooler (`add_pooling_layer=False`): a
task model that does not read the pooler neither reads nor writes it.
"""

import dataclasses
from typing import Optional

from kbert import tasks
from kbert.convert import _mapping, families
from kbert.convert._family import HF_TASKS
from kbert.tasks import registry
from kbert.tasks.task import default_label_names
from kbert.tasks.text_classification.model import family_heads, inferred_problem_type

# The names of the head weights, outside the encoder's prefix (`bert.`) in Hugging Face files
# (the task records' `hf_head_prefixes`); a family's own names add theirs (`head_prefixes`).
HEAD_PREFIXES = tuple(dict.fromkeys(
    prefix for record in registry.RECORDS.values() for prefix in record.hf_head_prefixes))
# kbert's problem_type -> transformers'.
PROBLEM_TYPES = {"single_label": "single_label_classification",
                 "multi_label": "multi_label_classification", "regression": "regression"}
# Task config entries that are not the head's (the preprocessor is the tokenizer's side).
_NOT_ARGUMENTS = ("name", "trainable", "backbone", "preprocessor")


@dataclasses.dataclass(frozen=True)
class TaskHead:
    """The task model a checkpoint holds.

    Attributes:
        task: the name of a task record with a model class (`kbert.tasks.registry`:
            "text_classifier", ...).
        architecture: what the checkpoint calls it: the Hugging Face class
            ("BertForSequenceClassification"), or the sentence-transformers modules.
        arguments: the task class's keyword arguments (`num_classes`, `problem_type`,
            `problem_type_declared`, `label_names`, `dropout`, `head`; `pooling`,
            `normalize`, `max_length`).
        refusal: why kbert's task model would not compute the checkpoint's (its family's
            `check_task_config`), or `None`. The task model is then refused with this
            message; the checkpoint's encoder still loads (task=None).
    """

    task: str
    architecture: str
    arguments: dict = dataclasses.field(default_factory=dict)
    refusal: Optional[str] = None

    @property
    def max_length(self):
        """An embedder's longest input (sentence-transformers' `max_seq_length`), or `None`
        where the checkpoint does not say."""
        return self.arguments.get("max_length")

    @property
    def label_names(self):
        """The outputs' names in id order (`id2label`), or `None`."""
        return self.arguments.get("label_names")

    @property
    def problem_type(self):
        """"single_label", "multi_label" or "regression" for a text classifier, else `None`."""
        return self.arguments.get("problem_type")


def describe(task):
    """"token_classifier (token-classification, ner)": the names a task answers to."""
    return registry.get(task).describe()


def check(task_head, task, source, architecture=None):
    """The `TaskHead` to build for `task` ("auto" or a task name); ValueError naming what
    the checkpoint holds and the task it serves when that is not `task`, or when `task`
    has no task model (feature-extraction, fill-mask)."""
    if task != "auto" and registry.get(task).model is None:
        record = registry.get(task)
        embedder = registry.TEXT_EMBEDDER
        hint = (f"; one embedding per text is the task {embedder.describe()}"
                if record is registry.BACKBONE else "")
        raise ValueError(
            f"task={task!r} ({record.name}) has no task model: it gives {record.summary}. "
            f"Load {source} with task=None, head={record.model_head!r} for it{hint}.")
    if task_head is not None and (task == "auto" or tasks.task_name(task) == task_head.task):
        if task_head.refusal is not None:
            raise ValueError(f"{task_head.refusal} Load its encoder with task=None and put "
                             "a new head on it.")
        return task_head
    if task_head is None:
        requested = "task" if task == "auto" else repr(tasks.task_name(task))
        held = f"a {architecture}" if architecture else "an encoder"
        raise ValueError(
            f"{source} holds {held} without a task head, so it serves no task. Load the "
            "encoder with task=None and put a new head on it: kbert.tasks.build("
            f"{requested}, kbert.convert.load(path, task=None), ...)."
        )
    raise ValueError(
        f"{source} holds a {task_head.architecture}, which serves "
        f"{describe(task_head.task)}, not {task!r}. Pass task='auto' (or "
        f"{task_head.task!r}) for it, or task=None for its encoder."
    )


# === Weight maps ===

def head_prefixes(family):
    """The names outside the encoder in the task checkpoints of `family` (a `FamilyFormat`):
    `HEAD_PREFIXES` and the first part of each of its `task_head_names` (DeBERTa's
    `pooler.`, which in BERT's files is the encoder's `bert.pooler.`)."""
    own = tuple(name.split(".")[0] + "." for name in family.task_head_names.values())
    return tuple(dict.fromkeys(HEAD_PREFIXES + own))


def reads_pooler(model):
    """Whether the task model's outputs depend on the backbone's pooler."""
    return isinstance(model, tasks.TextClassifier) and model.head == "pooled"


def pooler_variables(backbone):
    return {id(v) for v in backbone.pooler.weights} if backbone.pooler is not None else set()


def optional_pooler(entries, backbone):
    """`entries` with the pooler's marked optional: a task checkpoint of transformers may have
    none, and its backbone then keeps the initial pooler."""
    pooler = pooler_variables(backbone)
    return [e._replace(optional=True) if id(e.variable) in pooler else e for e in entries]


def _head_entries(model):
    """The head's entries under the family's names (`FamilyFormat.task_head_names`)."""
    renamed = families.of_model(model).task_head_names
    result = []
    for entry in _kbert_head_entries(model):
        names = []
        for name in entry.names:  # "classifier.dense.weight": layer, then the tensor
            layer, tensor = name.rsplit(".", 1)
            names.append(f"{renamed.get(layer, layer)}.{tensor}")
        result.append(entry._replace(names=tuple(names)))
    return result


def _kbert_head_entries(model):
    return _prediction_head_entries(model) + _classifier_entries(model)


def _prediction_head_entries(model):
    """The family's layer before the classifier (ModernBERT's), without the biases it has
    not (`classifier_bias`, `norm_bias` off)."""
    head = getattr(model, "prediction_head", None)
    if head is None:
        return []
    entries = (_mapping.dense_entries("prediction_head.dense", head.dense)
               + _mapping.layer_norm_entries("prediction_head.norm", head.norm))
    return [entry for entry in entries if entry.variable is not None]


def _classifier_entries(model):
    """The task model's own head layers (`Task.head_layers`), by their Hugging Face names."""
    named = getattr(type(model), "head_layers", tasks.Task.head_layers)
    if named is tasks.Task.head_layers:  # else it would be rebuilt with a fresh head, silently
        raise TypeError(f"kbert.convert has no weight map for the head of "
                        f"{type(model).__name__}: a task model names its head's layers in "
                        f"head_layers().")
    layers = model.head_layers()
    return [entry for name, layer in layers.items()
            for entry in _mapping.dense_entries(name, layer)]


def entries(model):
    """The weight map of a kbert task model: its backbone's and its head's, in Hugging Face
    names. The pooler is in it when the model reads it, optional for the embedder (whose
    sentence-transformers encoder is the base model, with its pooler), else left out."""
    backbone = model.backbone
    result = families.of_model(model).entries(backbone)
    if isinstance(model, tasks.TextEmbedder):
        result = optional_pooler(result, backbone)
    elif not reads_pooler(model):
        pooler = pooler_variables(backbone)
        result = [e for e in result if id(e.variable) not in pooler]
    return result + _head_entries(model)


# === Task heads in and out of Hugging Face config.json ===

def sentence_transformers_name(pooling, normalize):
    """The `architecture` of an embedder: "sentence-transformers model (Transformer ->
    Pooling -> Normalize, mean pooling)"."""
    modules = "Transformer -> Pooling" + (" -> Normalize" if normalize else "")
    return f"sentence-transformers model ({modules}, {pooling} pooling)"


def of_model(model):
    """The `TaskHead` of a kbert task model; `None` for any other model."""
    record = registry.of_model(model)
    if record is None or record.model is None:
        return None
    task = record.name
    arguments = {k: v for k, v in model.get_config().items() if k not in _NOT_ARGUMENTS}
    if task == "text_embedder":
        architecture = sentence_transformers_name(model.pooling, model.normalize)
    else:
        architecture = families.of_model(model).task_architectures.get(
            task, f"kbert {type(model).__name__}")
    return TaskHead(task, architecture, arguments)


def _label_names(values, source):
    id2label = values.get("id2label")
    if not id2label:
        return default_label_names(int(values.get("num_labels", 2)))
    try:
        by_id = {int(i): str(name) for i, name in id2label.items()}
    except ValueError:
        raise ValueError(f"{source}: id2label keys must be integers, got "
                         f"{sorted(id2label)}.") from None
    if sorted(by_id) != list(range(len(by_id))):
        raise ValueError(f"{source}: id2label has ids {sorted(by_id)}; expected 0 to "
                         f"{len(by_id) - 1}.")
    return [by_id[i] for i in range(len(by_id))]


def _problem_type(value, num_labels, source):
    if value is None:  # as transformers decides without labels: one output is a regression
        return inferred_problem_type(num_labels)  # (not declared)
    ours = {theirs: ours for ours, theirs in PROBLEM_TYPES.items()}
    if value not in ours:
        raise ValueError(f"{source}: problem_type={value!r} is not supported. Supported: "
                         f"{', '.join(ours)}.")
    return ours[value]


def from_hf_config(values, family, source="config.json"):
    """The `TaskHead` of a Hugging Face config.json dict, or `None` when its architecture is
    not one of the family's task classes (a base model, a pretraining model)."""
    architecture = (values.get("architectures") or [None])[0]
    task = {cls: name for name, cls in family.task_architectures.items()}.get(architecture)
    if task is None:
        return None
    arguments = {}
    if registry.RECORDS[task].labelled:
        arguments["label_names"] = _label_names(values, source)
        arguments["num_classes"] = len(arguments["label_names"])
    if task == "text_classifier":
        arguments["problem_type"] = _problem_type(values.get("problem_type"),
                                                  arguments["num_classes"], source)
        arguments["problem_type_declared"] = values.get("problem_type") is not None
    field = family.task_dropout.get(task)
    if field is not None and values.get(field) is not None:
        arguments["dropout"] = float(values[field])
    refusal = None
    if family.check_task_config is not None:
        try:  # kept for a task load: the encoder of the checkpoint loads all the same
            family.check_task_config(task, values, source)
        except ValueError as error:
            refusal = str(error)
    return TaskHead(task, architecture, arguments, refusal)


def to_hf_config(task_head, family, source="model"):
    """The config.json entries of a task head: `architectures`, `id2label` / `label2id`,
    `problem_type` (where declared: transformers' pipeline scores one output without it with a
    sigmoid) and the head's dropout field."""
    task, arguments = task_head.task, task_head.arguments
    if task_head.refusal is not None:
        raise ValueError(task_head.refusal)
    if task not in HF_TASKS or task not in family.task_architectures:
        raise ValueError(f"{source}: transformers has no {family.name} model of the task "
                         f"{task!r}; it has {', '.join(family.task_architectures) or 'none'}.")
    values = {"architectures": [family.task_architectures[task]]}
    heads = family_heads(family.name)
    if task == "text_classifier" and arguments.get("head", "auto") not in ("auto", *heads):
        raise ValueError(
            f"{source}: a {family.name} TextClassifier with head={arguments['head']!r} has no "
            f"Hugging Face form; {family.task_architectures[task]} is head="
            f"{' or '.join(map(repr, heads))}."
        )
    if registry.RECORDS[task].labelled:
        names = arguments.get("label_names") or default_label_names(arguments["num_classes"])
        values["id2label"] = {str(i): name for i, name in enumerate(names)}
        values["label2id"] = {name: i for i, name in enumerate(names)}
    if task == "text_classifier" and arguments.get("problem_type_declared", True):
        values["problem_type"] = PROBLEM_TYPES[arguments.get("problem_type", "single_label")]
    field = family.task_dropout.get(task)
    if field is not None and arguments.get("dropout") is not None:
        values[field] = arguments["dropout"]
    if family.task_config_to_hf is not None:
        values.update(family.task_config_to_hf(task_head))
    return values
