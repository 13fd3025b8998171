"""What `model=` of `kbert.pipeline` can be.

A model is one of:

- a kbert model object: a task model (`kbert.tasks`), a pretrainer with a masked-LM head,
  or a backbone (it needs `tokenizer=`);
- a checkpoint directory of any format kbert reads (`kbert.convert`), its tokenizer inside,
  a tools/finetune.py run or a tools/pretrain.py run (`kbert.loading`);
- a preset name (`kbert.presets`): its pretrained backbone / masked-LM pretrainer;
- a kbert export's SavedModel directory (`kbert.export`: what it is read from its
  export.json, the options it fixed the pipeline's defaults), run through its `serving_ids`
  signature, loaded by `kbert.untrusted.load_saved_model`, which refuses unsafe
  SavedModels unless `trusted=True`;
- a kbert ONNX export's directory (`format="onnx"`), run by ONNX Runtime
  (`onnx_source`), as any kbert model is with `runtime="onnxruntime"`.

Every source becomes a `Source`: a runner (features -> numpy outputs), the tokenizer, and
the kind of model, which says the pipeline tasks it serves.
"""

import os

from kbert import loading
from kbert.pipelines.model_source import KerasRunner, Source
from kbert.tasks import registry
from kbert.tasks.task import default_label_names
from kbert.tasks.text_embedding.decode import sequence_length


def kind_of(model):
    """The kind of a kbert model object: the name of its task's record
    (`kbert.tasks.registry.of_model`, a key of `model_source.SERVES`)."""
    record = registry.of_model(model)
    if record is None:
        raise TypeError(
            f"model={type(model).__name__} is no kbert model a pipeline can run: give a task "
            "model (kbert.tasks), a pretrainer with a masked-LM head, a backbone, a checkpoint "
            "directory, a preset name, a SavedModel directory or an ONNX export's directory.")
    return record.name


def from_model(model, tokenizer, task):
    """A `Source` of a kbert model object; feature-extraction runs its backbone. A task model
    with a preprocessor brings its tokenizer."""
    if tokenizer is None:
        tokenizer = getattr(getattr(model, "preprocessor", None), "tokenizer", None)
    if tokenizer is None:
        raise ValueError(f"model={type(model).__name__} is a model object without a "
                         "preprocessor: pass its tokenizer too (tokenizer=kbert.load(...)"
                         ".tokenizer or kbert.tokenizers.WordPieceTokenizer(...)).")
    kind = kind_of(model)
    record = registry.RECORDS[kind]
    max_length = _backbone(model).config.max_sequence_length
    embedder_length = getattr(model, "max_length", None) if kind == "text_embedder" else None
    if task == "sentence-embeddings":
        max_length = sequence_length(max_length, embedder_length)
    source = Source(None, tokenizer, kind, type(model).__name__, max_length,
                    label_names=getattr(model, "label_names", None),
                    problem_type=getattr(model, "declared_problem_type", None),
                    windows=getattr(model, "windows", None),
                    segments=getattr(model, "segments", None))
    runner_model = _backbone(model) if registry.get(task) is registry.BACKBONE else model
    if record.labelled and source.label_names is None:
        source.label_names = default_label_names(model.num_classes)
    source.runner = KerasRunner(runner_model,
                                _backbone(model).config.max_sequence_length)
    return source


def _backbone(model):
    from kbert import models

    return model if isinstance(model, models.Backbone) else model.backbone


def from_spec(spec, tokenizer, task):
    """A preset name, a run or a checkpoint directory, as `kbert.loading.source` finds it: the
    model the task needs (`ModelSource.build(task=...)`, which refuses a source whose heads
    cannot serve it); its tokenizer is the source's unless `tokenizer` is given."""
    found = loading.source(spec)
    model = found.build(task=task)
    return from_model(model, found.tokenizer() if tokenizer is None else tokenizer, task)


def resolve(task, model, tokenizer=None, trusted=False, runtime=None, quantize=None):
    """The `Source` of `model=` for `task` (see the module docstring), on `runtime`
    ("tensorflow" or "onnxruntime", with `quantize`: `onnx_source`; None: the model's own,
    ONNX Runtime for an ONNX export, else TensorFlow)."""
    from kbert.pipelines import onnx_source

    if isinstance(model, (str, os.PathLike)) and onnx_source.is_onnx_export(model):
        onnx_source.check_pipeline_runtime(runtime or "onnxruntime", quantize)
        if runtime == "tensorflow":
            raise ValueError(f"{os.fspath(model)} is an ONNX export, which runs on ONNX "
                             f"Runtime: pass runtime=None or 'onnxruntime'.")
        return onnx_source.from_onnx_export(model, tokenizer, task, quantize)
    runtime = runtime or "tensorflow"
    onnx_source.check_pipeline_runtime(runtime, quantize)
    if model is None:
        raise ValueError(f"kbert.pipeline({task!r}) needs model=: a kbert model, a "
                         "checkpoint directory, a preset name, a SavedModel directory or an "
                         "ONNX export's directory (nothing is downloaded by default).")
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        kind = loading.kind_of(path)  # a ValueError naming what a spec may be
        if kind == "saved_model":
            if runtime != "tensorflow":
                raise ValueError(f"runtime={runtime!r} converts a kbert model; {path} is a "
                                 f"SavedModel, which runs on TensorFlow.")
            from kbert.pipelines.saved_model_source import from_saved_model

            return from_saved_model(path, tokenizer, task, trusted)
        source = from_spec(path, tokenizer, task)
    else:
        source = from_model(model, tokenizer, task)
    if runtime == "onnxruntime":
        source = onnx_source.on_onnxruntime(source, quantize)
    return source
