"""Pipelines on ONNX Runtime: an ONNX export's directory as `model=` (`from_onnx_export`),
or any kbert model converted when the pipeline is made (`on_onnxruntime`, the pipeline's
`runtime="onnxruntime"`). Either way the pipeline tokenizes, batches and decodes in Python
as on the Keras model, and ONNX Runtime runs the model of token ids (`kbert.serving.onnx`),
so every pipeline option works as there; `quantize="int8"` runs ONNX Runtime's dynamic int8
quantization of it."""

import os

from kbert.pipelines.model_source import KerasRunner
from kbert.serving import onnx

# (What follows imports TensorFlow, the converter's and `serving_ids`' names, when it runs:
# `import kbert.pipelines` does not.)
RUNTIMES = ("tensorflow", "onnxruntime")


def is_onnx_export(path):
    """Whether `path` is an ONNX export's directory (it holds `model.onnx`)."""
    return os.path.isfile(os.path.join(os.fspath(path), onnx.MODEL_FILE))


def check_pipeline_runtime(runtime, quantize):
    """ValueError for a runtime the pipelines do not run, or a quantization without ONNX."""
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime={runtime!r}; allowed: {', '.join(map(repr, RUNTIMES))}.")
    if quantize is not None and runtime != "onnxruntime":
        raise ValueError(f"quantize={quantize!r} quantizes the ONNX model: pass "
                         f"runtime='onnxruntime' with it.")
    onnx.check_quantize(quantize)


def from_onnx_export(path, tokenizer, task, quantize=None):
    """A `Source` running the ONNX export at `path` (`kbert.export(..., format="onnx")`);
    `quantize="int8"` quantizes a float32 export as it loads."""
    from kbert.loading.sources import exported_tokenizer
    from kbert.pipelines.saved_model_source import described
    from kbert.serving import metadata
    from kbert.tasks.graph.signatures import RAW_OUTPUTS

    path = os.fspath(path)
    meta = metadata.read(path)
    if meta is None:
        raise ValueError(f"{path} holds {onnx.MODEL_FILE} but no {metadata.FILE}: pipelines "
                         f"run kbert's ONNX exports (kbert.export(..., format='onnx')), which "
                         f"state their task there.")
    if meta.get("runtime") != "onnx" or meta.get("model") not in RAW_OUTPUTS:
        raise ValueError(f"The export {path} states a {meta.get('model')!r} model in a "
                         f"{meta.get('runtime')!r} file: a pipeline runs the ONNX export of "
                         f"one of {', '.join(RAW_OUTPUTS)}.")
    if quantize is not None and meta.get("quantize") is not None:
        raise ValueError(f"The ONNX export {path} is quantized already "
                         f"({meta['quantize']}): pass quantize=None.")
    model = os.path.join(path, onnx.MODEL_FILE)
    if quantize is not None:
        import onnx as onnx_library

        model = onnx.quantized(onnx_library.load(model))
    runner = onnx.SessionRunner(onnx.session(model), RAW_OUTPUTS[meta["model"]])
    width = _width(runner.session)
    quantized = quantize or meta.get("quantize")
    what = "ONNX export" + ("" if quantized is None else f" (quantized {quantized})")
    return described(meta, path, what, runner,
                     tokenizer or exported_tokenizer(path, f"ONNX export {path}"), task, width,
                     meta.get("max_length") or 512)


def _width(session):
    """The last dimension of a session's `logits` output (None: no such output)."""
    for output in session.get_outputs():
        if output.name == "logits":
            return output.shape[-1] if isinstance(output.shape[-1], int) else None
    return None


def on_onnxruntime(source, quantize=None):
    """`source` (a kbert model's) with its model converted to ONNX (`kbert.serving.onnx`) and
    run by ONNX Runtime; `quantize="int8"`: quantized first. A ValueError for a source whose
    model has no ONNX form (a masked-LM pretrainer's fill-mask) or that runs an export."""
    from kbert.tasks.graph.signatures import RAW_OUTPUTS

    runner = source.runner
    if not isinstance(runner, KerasRunner):
        raise ValueError(f"runtime='onnxruntime' converts a kbert model; {source.name} runs "
                         f"its own graph. Load its ONNX export instead "
                         f"(kbert.export(..., format='onnx')).")
    model = runner.model
    # Feature extraction runs the backbone of any model (`sources.from_model`).
    kind = "backbone" if _is_backbone(model) else source.kind
    if kind not in RAW_OUTPUTS:
        raise ValueError(f"runtime='onnxruntime' runs a model of token ids and its raw "
                         f"outputs ({', '.join(RAW_OUTPUTS)}); {source.name} is a "
                         f"{kind.replace('_', ' ')}.")
    proto = onnx.model_proto(model, kind)
    if quantize is not None:
        proto = onnx.quantized(proto)
    source.runner = onnx.SessionRunner(onnx.session(proto), RAW_OUTPUTS[kind])
    source.name = f"{source.name} on ONNX Runtime" + (
        "" if quantize is None else f" (quantized {quantize})")
    return source


def _is_backbone(model):
    from kbert import models

    return isinstance(model, models.Backbone)
