"""The task model `kbert.load` gives: the one a spec holds, or a new head of the task asked
for on the spec's encoder; either way with its preprocessor on the spec's tokenizer, so that
`fit`, `evaluate` and `predict` take text."""

import logging

from kbert.tasks import registry


def _holds(found, record):
    """Whether the source holds a fine-tuned head of `record`'s task (a preset or a
    pretraining run never does: asked before anything is downloaded)."""
    if found.kind not in ("checkpoint", "finetuning_run"):
        return False
    held = found.checkpoint.task
    return held is not None and held.task == record.name


def _head_arguments(record, num_labels, label_names):
    given = {name: value for name, value in (("num_classes", num_labels),
                                             ("label_names", label_names)) if value is not None}
    if given and not record.labelled:
        raise ValueError(f"num_labels and label_names name a classifier's classes; the task "
                         f"{record.describe()} has none.")
    if record.labelled and not given:
        raise ValueError(f"A new {record.name} head needs its classes: give num_labels=N or "
                         "label_names=[...].")
    if record is registry.TEXT_CLASSIFIER and num_labels == 1 and label_names is None:
        given["problem_type"] = "regression"  # as transformers' num_labels=1
    return given


def preprocessor_for(model, record, tokenizer, sequence_length=None):
    """`record`'s preprocessor for `model` on `tokenizer`, `sequence_length` long (default:
    the task's usual length, an embedder's `max_length`, at most the model's positions)."""
    positions = model.backbone.config.max_sequence_length
    if sequence_length is None:
        module = record.module("preprocessor")
        default = getattr(module, module.PREPROCESSOR).default_sequence_length
        sequence_length = min(getattr(model, "max_length", None) or default, positions)
    return record.preprocessor(tokenizer, sequence_length=sequence_length)


def with_task(found, task, head, dtype, num_labels, label_names, sequence_length,
              config_overrides):
    """The model `kbert.load` gives for `found` (a `ModelSource`) and `task`."""
    record = registry.get(task) if task is not None else None
    fresh = (record is not None and record.model is not None and found.kind != "saved_model"
             and not _holds(found, record))
    if fresh:
        if head != "auto":
            raise ValueError(f"head={head!r} asks for a pretraining model and task={task!r} "
                             "for a task model: give one of them.")
        arguments = _head_arguments(record, num_labels, label_names)
        backbone = found.build(head=None, dtype=dtype, **config_overrides)
        model = record.build(backbone, **arguments)
        logging.warning("%s: a new %s head, initialized at random: fine-tune it before using "
                        "its predictions.", found.description, record.name)
    else:
        if num_labels is not None or label_names is not None:
            what = (f"{found.description} holds a fine-tuned {record.name} head"
                    if record is not None and record.model is not None
                    else f"task={task!r} builds no new classifier head")
            raise ValueError(f"num_labels and label_names are for a new head; {what}. Load "
                             "it without them, or load its encoder (head=None) and build a "
                             "head on it (kbert.tasks.build).")
        model = found.build(task=task, head=head, dtype=dtype, **config_overrides)
    held = registry.of_model(model)
    if (held is not None and held.model is not None and found.kind != "saved_model"
            and getattr(model, "preprocessor", None) is None and held.preprocessed):
        tokenizer = None if (found.kind == "preset" and found.weights is None) else \
            found.tokenizer()
        if tokenizer is not None:
            model.set_preprocessor(preprocessor_for(model, held, tokenizer, sequence_length))
    elif sequence_length is not None:
        raise ValueError(f"sequence_length is the length of a task model's preprocessor; "
                         f"{found.description} gives a {type(model).__name__} without one "
                         "(a backbone or a pretrainer, or a model without a tokenizer).")
    return model
