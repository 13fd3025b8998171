"""One loader: `kbert.load(spec, task=None, head="auto")`, in the spirit of keras-hub's
`from_preset`: one entry point that finds out what `spec` is and builds the model asked for.

    loaded = kbert.load("bert_base")                          # a preset's release
    loaded = kbert.load("runs/pretrain", head=None)           # a tools/pretrain.py run's encoder
    loaded = kbert.load("runs/finetune")                      # a tools/finetune.py run's model
    loaded = kbert.load("bert-base-uncased/", task="fill-mask")  # any checkpoint kbert reads
    loaded = kbert.load("export/")                            # a SavedModel, checked first
    loaded.model, loaded.tokenizer

`source(spec)` is the first half alone (the tokenizer now, the model later, e.g. inside a
distribution strategy's scope): fine-tuning, distillation teachers and the pipelines use it.

(The module is `kbert.loading`, not `kbert.load`: a module `kbert/load.py` would replace the
function `kbert.load` by itself as soon as anything imported it.)
"""

import dataclasses
import os
from typing import Optional

from kbert import presets
from kbert.loading import hub, runs
from kbert.loading.runs import RunError
from kbert.loading.sources import (
    HEADS, KINDS, SAVED_MODEL_FILE, CheckpointSource, FinetuningRunSource, KerasFileSource,
    ModelSource, PresetSource, PretrainingRunSource, SavedModelSource,
)
from kbert.loading.task_models import with_task
from kbert.serving.onnx import MODEL_FILE as ONNX_MODEL_FILE

ALLOWED = ("a preset name, a tools/pretrain.py or tools/finetune.py run directory (config.json "
           "and checkpoints/), a checkpoint directory (Hugging Face, TF1, keras-hub, kbert), a "
           "Hugging Face hub id in the local hub cache, a .keras file (model.save) or an "
           "exported SavedModel directory (saved_model.pb)")


@dataclasses.dataclass
class Loaded:
    """What `kbert.load` gives: everything a caller needs to run the model on text.

    Attributes:
        model: the Keras model asked for (a backbone, a pretrainer, a masked-LM pretrainer or
            a task model), or for a SavedModel the checked, loaded SavedModel.
        tokenizer: its kbert tokenizer (WordPiece, SentencePiece or byte-level BPE); `None`
            for a preset with `weights=None` (a random model has no vocabulary).
        description: where it came from, for logs ("preset bert_base", "run <dir> (<ckpt>)").
        max_sequence_length: the longest input it takes.
        label_names: a classifier's class or tag names, else `None`.
        kind: what `spec` was, one of `KINDS`.
    """

    model: object
    tokenizer: object
    description: str
    max_sequence_length: Optional[int]
    label_names: Optional[list] = None
    kind: Optional[str] = None


def kind_of(spec):
    """What `spec` is, one of `KINDS`, found from what it holds without loading it; a
    ValueError naming what was tried and what is allowed when it is none of them."""
    if not isinstance(spec, (str, os.PathLike)):
        raise TypeError(f"spec={spec!r} ({type(spec).__name__}): expected {ALLOWED}.")
    path = os.fspath(spec)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, SAVED_MODEL_FILE)):
            return "saved_model"
        if os.path.isfile(os.path.join(path, ONNX_MODEL_FILE)):
            raise ValueError(f"{path!r} is an ONNX export: run it with kbert.pipeline(task, "
                             f"model={path!r}) (ONNX Runtime runs it; kbert.load builds Keras "
                             f"models). Expected {ALLOWED}.")
        if runs.is_run(path):
            return "finetuning_run" if runs.is_finetuning_run(path) else "pretraining_run"
        return "checkpoint"
    if os.path.isfile(path) and path.endswith(".keras"):
        return "keras_file"
    if os.path.exists(path) or os.path.exists(f"{path}.index"):  # a file, a TF1 prefix
        return "checkpoint"
    if path in presets.list():
        return "preset"
    unknown = (f"{path!r} does not exist and is not a preset name (presets: "
               f"{', '.join(presets.list())}). Expected {ALLOWED}.")
    if hub.looks_like_hub_id(path):
        if hub.cached_snapshot(path) is None:
            raise hub.not_cached(path, unknown)
        return "checkpoint"
    raise ValueError(unknown)


def source(spec, weights=presets.PRETRAINED, sha256=None, trusted=False):
    """The `ModelSource` of `spec` (see `kbert.load`): its tokenizer and description now, its
    model when `build(task, head, dtype, **config_overrides)` is called."""
    kind = kind_of(spec)
    path = os.fspath(spec)
    if kind != "preset" and (weights != presets.PRETRAINED or sha256 is not None):
        raise ValueError(f"weights= and sha256= choose a preset's weights; {path!r} is a "
                         f"{kind.replace('_', ' ')} with weights of its own.")
    if kind == "preset":
        return PresetSource(path, weights, sha256)
    if kind != "saved_model" and trusted:
        raise ValueError(f"trusted=True skips the check of a SavedModel; {path!r} is a "
                         f"{kind.replace('_', ' ')}.")
    if kind == "saved_model":
        return SavedModelSource(path, trusted)
    if kind == "pretraining_run":
        return PretrainingRunSource(path)
    if kind == "finetuning_run":
        return FinetuningRunSource(path)
    if kind == "keras_file":
        return KerasFileSource(path)
    if not os.path.exists(path) and not os.path.exists(f"{path}.index"):
        path = hub.cached_snapshot(path)  # a hub id (kind_of found its snapshot)
    return CheckpointSource(path)


def load(spec, task=None, head="auto", *, num_labels=None, label_names=None,
         sequence_length=None, dtype=None, weights=presets.PRETRAINED, sha256=None,
         trusted=False, output_hidden_states=False, output_attentions=False,
         **config_overrides):
    """The model and tokenizer that `spec` names.

    Args:
        spec: a preset name (`kbert.presets.list()`), a tools/pretrain.py run's model_dir
            (rebuilt from its config.json, with its newest checkpoint), a tools/finetune.py
            run's model_dir (the model.keras it saved), a checkpoint directory kbert reads
            (Hugging Face, original TF1, keras-hub, kbert's own: `kbert.convert`), or a
            SavedModel directory (`kbert.export`), which `kbert.untrusted` checks before
            anything in it runs.
        task: `None`: the model `spec` holds (a fine-tuned checkpoint's task model, else the
            pretraining model `head` names); or a task name of `kbert.tasks.registry` (kbert's
            or a transformers pipeline name): the task model `spec` holds, or a new head of
            that task on its encoder where it holds none (a preset, a pretrained checkpoint,
            a run, a sentence-transformers folder's encoder); for "fill-mask" /
            "feature-extraction" the masked-LM pretrainer / the backbone. A task model comes
            with its preprocessor (`model.preprocessor`, on the spec's tokenizer): `fit`,
            `evaluate` and `predict` take text.
        num_labels, label_names: a new classifier head's classes (as transformers'
            `num_labels`: a text classifier with one is a regression; names: the labels `fit`
            takes and pipelines answer). Only for a new head of a labelled task. A new head
            is initialized at random (a warning says so): fine-tune it.
        sequence_length: the preprocessor's longest input (default: 512, question answering
            384, an embedder its `max_length`; at most the model's positions).
        head: "auto" (every pretraining head `spec` has; a fine-tuned checkpoint's task
            model), "pretrainer", "mlm" or `None` (the backbone: also the encoder of a
            fine-tuned checkpoint or of a run).
        dtype: a Keras dtype policy, e.g. "mixed_bfloat16".
        weights: for a preset: "pretrained" (its release, downloaded and converted once into
            `$KBERT_CACHE_DIR`), a checkpoint directory of its architecture, or `None`
            (random initialisation). See `kbert.presets.load`.
        sha256: for a preset's release: the hash to pin (see `kbert.presets.load`).
        trusted: for a SavedModel: skip the check (only for one you made yourself).
        output_hidden_states, output_attentions: as transformers' options of those names
            (off by default: the model is then the one built, unchanged): the model's
            `with_internals(...)` instead, on the same layers and weights, whose outputs add
            `hidden_states` (the embeddings' output, then each layer's) and/or `attentions`
            (each layer's probabilities) to the model's own: a backbone's outputs dict
            (`Backbone.with_internals`), a task model's (a single output under "logits",
            a `TextEmbedder`'s under "embeddings"; `QuestionAnswerer`'s `start_logits` and
            `end_logits`) or a pretrainer's (`mlm_logits`, ...), in transformers' order: the
            task's outputs, `hidden_states`, `attentions`. Not for a SavedModel.
        **config_overrides: dropouts, `activation`, `initializer_range` or a shorter
            `max_sequence_length`; with `weights=None` any architecture field.

    Returns:
        a `Loaded` record: `model`, `tokenizer`, `description`, `max_sequence_length`,
        `label_names`, `kind`.
    """
    found = source(spec, weights=weights, sha256=sha256, trusted=trusted)
    internals = bool(output_hidden_states) or bool(output_attentions)
    if internals and found.kind == "saved_model":
        raise ValueError(
            f"output_hidden_states and output_attentions need a Keras model on a kbert "
            f"backbone (a backbone, a task model, a pretrainer); {spec!r} is a SavedModel, "
            "loaded as it was exported: load the checkpoint it was exported from instead.")
    if found.kind == "keras_file":
        given = [name for name, value in (("num_labels", num_labels),
                                          ("label_names", label_names),
                                          ("sequence_length", sequence_length))
                 if value is not None]
        if given:
            raise ValueError(f"The {found.description} is loaded as it was saved: "
                             f"{', '.join(given)} do not apply to it.")
        model = found.build(task=task, head=head, dtype=dtype, **config_overrides)
    else:
        model = with_task(found, task, head, dtype, num_labels, label_names, sequence_length,
                          config_overrides)
    if internals and not hasattr(model, "with_internals"):
        raise ValueError(
            f"output_hidden_states and output_attentions need a Keras model on a kbert "
            f"backbone (a backbone, a task model, a pretrainer); {spec!r} gives a "
            f"{type(model).__name__}.")
    tokenizer = getattr(getattr(model, "preprocessor", None), "tokenizer", None)
    if tokenizer is None and not (found.kind == "preset" and weights is None):
        tokenizer = found.tokenizer()
    length = getattr(getattr(model, "backbone", model), "config", None)
    length = length.max_sequence_length if length is not None else found.max_sequence_length
    label_names = getattr(model, "label_names", None)
    if internals:
        model = model.with_internals(hidden_states=bool(output_hidden_states),
                                     attentions=bool(output_attentions))
    return Loaded(model, tokenizer, found.description, length, label_names=label_names,
                  kind=found.kind)


__all__ = ["ALLOWED", "HEADS", "KINDS", "CheckpointSource", "FinetuningRunSource",
           "KerasFileSource", "Loaded",
           "ModelSource", "PresetSource", "PretrainingRunSource", "RunError",
           "SavedModelSource", "kind_of", "load", "source"]
