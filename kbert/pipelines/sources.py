"""What `model=` of `kbert.pipeline` can be.

A model is one of:
- a kbert model object: a task model (`kbert.tasks`), a pretrainer with a masked-LM head,
  or a backbone (it needs `tokenizer=`);
- a checkpoint directory of any format kbert reads (`kbert.convert`), its tokenizer inside;
- a preset name (`kbert.presets`): its pretrained backbone / masked-LM pretrainer;
- an exported SavedModel directory (`kbert.export.export_saved_model`), run through its
  `serving_ids` signature, loaded by `kbert.export.load_saved_model`, which refuses unsafe
  SavedModels unless `trusted=True`.

Every source becomes a `Source`: a runner (features -> numpy outputs), the tokenizer, and
the kind of model, which says the pipeline tasks it serves.
"""

import os

from kbert.pipelines.model_source import KerasRunner, Source
from kbert.tasks.task import default_label_names

# The kbert task of `kbert.convert.load(path, task=...)` for each pipeline task.
CHECKPOINT_TASKS = {
    "text-classification": "text_classifier",
    "zero-shot-classification": "text_classifier",
    "token-classification": "token_classifier",
    "question-answering": "question_answerer",
    "sentence-embeddings": "text_embedder",
}


def kind_of(model):
    """The kind of a kbert model object (a key of `model_source.SERVES`)."""
    from kbert import models, tasks

    for cls, kind in ((tasks.TextClassifier, "text_classifier"),
                      (tasks.TokenClassifier, "token_classifier"),
                      (tasks.QuestionAnswerer, "question_answerer"),
                      (tasks.TextEmbedder, "text_embedder")):
        if isinstance(model, cls):
            return kind
    inputs = getattr(model, "input", None)
    outputs = getattr(model, "output", None)
    if isinstance(inputs, dict) and "mask_positions" in inputs and isinstance(outputs, dict) \
            and "mlm_logits" in outputs:
        return "masked_lm"
    if isinstance(model, models.Backbone):
        return "backbone"
    raise TypeError(
        f"model={type(model).__name__} is no kbert model a pipeline can run: give a task "
        "model (kbert.tasks), a pretrainer with a masked-LM head, a backbone, a checkpoint "
        "directory, a preset name or a SavedModel directory.")


def from_model(model, tokenizer, task):
    """A `Source` of a kbert model object; feature-extraction runs its backbone."""
    if tokenizer is None:
        raise ValueError(f"model={type(model).__name__} is a model object: pass its "
                         "tokenizer too (tokenizer=kbert.tokenizers.WordPieceTokenizer(...) "
                         "or kbert.convert.load_tokenizer(checkpoint)).")
    kind = kind_of(model)
    max_length = _backbone(model).config.max_sequence_length
    embedder_length = getattr(model, "max_length", None) if kind == "text_embedder" else None
    if task == "sentence-embeddings" and embedder_length is not None:
        max_length = min(max_length, embedder_length)  # sentence-transformers' max_seq_length
    source = Source(None, tokenizer, kind, type(model).__name__, max_length,
                    label_names=getattr(model, "label_names", None),
                    problem_type=getattr(model, "declared_problem_type", None))
    runner_model = _backbone(model) if task == "feature-extraction" else model
    if kind in ("text_classifier", "token_classifier") and source.label_names is None:
        source.label_names = default_label_names(model.num_classes)
    source.runner = KerasRunner(runner_model)
    return source


def _backbone(model):
    from kbert import models

    return model if isinstance(model, models.Backbone) else model.backbone


def from_checkpoint(path, tokenizer, task):
    """A checkpoint directory, read once: `Checkpoint.build_task` builds the model the task
    needs, and refuses a checkpoint whose heads cannot serve it; its tokenizer is the
    checkpoint's unless `tokenizer` is given."""
    from kbert import convert

    checkpoint = convert.read(path)
    if task in CHECKPOINT_TASKS:
        model = checkpoint.build_task(CHECKPOINT_TASKS[task])
    else:  # fill-mask: the masked-LM head; feature-extraction: the backbone alone.
        model = checkpoint.build(head="auto" if task == "fill-mask" else None)
        if task == "fill-mask" and kind_of(model) != "masked_lm":
            raise ValueError(f"fill-mask needs a masked-LM head, and the checkpoint {path} "
                             f"has none (it gives a {type(model).__name__}).")
    return from_model(model, checkpoint.tokenizer() if tokenizer is None else tokenizer, task)


def from_preset(name, tokenizer, task):
    """A preset's pretrained release: fill-mask and feature-extraction only (a preset holds
    no fine-tuned task head)."""
    from kbert import presets

    if task not in ("fill-mask", "feature-extraction"):
        raise ValueError(
            f"Preset {name!r} is a pretrained model without a fine-tuned {task} head: it "
            "serves fill-mask and feature-extraction. Fine-tune a task model (kbert.tasks) "
            "or pass a fine-tuned checkpoint directory.")
    model = presets.load(name, head="mlm" if task == "fill-mask" else None)
    return from_model(model, tokenizer or presets.load_tokenizer(name), task)


def is_saved_model(path):
    return os.path.isfile(os.path.join(path, "saved_model.pb"))


def resolve(task, model, tokenizer=None, trusted=False):
    """The `Source` of `model=` for `task` (see the module docstring)."""
    if model is None:
        raise ValueError(f"kbert.pipeline({task!r}) needs model=: a kbert model, a "
                         "checkpoint directory, a preset name or a SavedModel directory "
                         "(nothing is downloaded by default).")
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if os.path.isdir(path):
            if is_saved_model(path):
                from kbert.pipelines.saved_model_source import from_saved_model

                return from_saved_model(path, tokenizer, task, trusted)
            return from_checkpoint(path, tokenizer, task)
        from kbert import presets

        if path in presets.list():
            return from_preset(path, tokenizer, task)
        raise ValueError(f"model={path!r} is neither a directory nor a preset name "
                         f"(presets: {', '.join(presets.list())}).")
    return from_model(model, tokenizer, task)
