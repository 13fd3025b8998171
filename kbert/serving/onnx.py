"""ONNX exports: a kbert model of token ids in and its raw outputs out, converted by tf2onnx,
run by ONNX Runtime; the tokenizer stays on the host (kbert's, in Python).

The converter is tf2onnx (`tf2onnx.convert.from_function` on the model's call traced with
open batch and length): it is what Keras' own `model.export(format="onnx")` runs under the
TensorFlow backend, called here directly so that the graph is the one `serving_ids` traces
(the same inputs and output names) and so that one op TensorFlow 2.21 emits and tf2onnx 1.17
has no handler for, `Erfc` (the exact GELU), is written as `1 - Erf(x)`. The graph is
ONNX opset `OPSET`, inputs int32 [batch, length] (`token_ids`, `segment_ids` where the model
takes them, `padding_mask`), outputs float32 named as `serving_ids`' (`RAW_OUTPUTS`).

`quantize="int8"` is ONNX Runtime's dynamic quantization (`quantize_dynamic`): the weights of
every MatMul / Gemm in int8, one scale per output channel, activations quantized per batch
at run time; embedding tables, LayerNorm and softmax stay float32. Per channel because one
scale per matrix moved all-MiniLM-L6-v2's sentence embeddings to a mean cosine of 0.955 with
the float model's on 1,000 real sentences, and per channel to 0.993; quantizing the
embedding tables too gained no speed.

An export (`export_onnx`, `kbert.export(..., format="onnx")`) is a directory: `model.onnx`,
`export.json` (`kbert.serving.metadata`) and the tokenizer's files, which
`kbert.pipeline(task, model=directory)` runs. Needs the extra `onnx`.
"""

import os
import tempfile

import numpy as np

from kbert import _extras

OPSET = 17
MODEL_FILE = "model.onnx"
QUANTIZE = (None, "int8")
_FEATURE = "Exporting to ONNX"


def check_quantize(quantize):
    """ValueError for a quantization kbert does not make of an ONNX model."""
    if quantize not in QUANTIZE:
        raise ValueError(f"quantize={quantize!r} for ONNX; allowed: None (float32) or 'int8' "
                         f"(ONNX Runtime's dynamic quantization: int8 weights, activations "
                         f"quantized at run time).")


def _erfc(ctx, node, name, args):
    """tf2onnx handler of TensorFlow's Erfc: erfc(x) = 1 - erf(x) (ONNX has Erf only)."""
    erf = ctx.make_node("Erf", [node.input[0]])
    one = ctx.make_const(f"{node.name}_one", np.array(1, np.float32))
    outputs = list(node.output)
    ctx.remove_node(node.name)
    ctx.make_node("Sub", [one.output[0], erf.output[0]], outputs=outputs, name=node.name)


def ids_inputs(model):
    """The id inputs of `model` (a Keras model of token ids), in `serving_ids`' order."""
    return [name for name in ("token_ids", "segment_ids", "padding_mask")
            if name in model.input]


def model_proto(model, kind):
    """The `onnx.ModelProto` of `model` (a kbert model of kind `kind`, a key of
    `RAW_OUTPUTS`: ids in, raw outputs out in float32, as `serving_ids`), converted by
    tf2onnx."""
    tf2onnx = _extras.require("tf2onnx", "onnx", _FEATURE)
    import tensorflow as tf

    from kbert.tasks.graph.signatures import raw_outputs

    serve = raw_outputs(model, kind)
    names = ids_inputs(model)
    specs = [tf.TensorSpec([None, None], tf.int32, name) for name in names]

    @tf.function(input_signature=specs)
    def serving_ids(*ids):
        return serve(dict(zip(names, ids)))

    proto, _ = tf2onnx.convert.from_function(
        serving_ids, input_signature=specs, opset=OPSET,
        custom_op_handlers={"Erfc": (_erfc, [])})
    return proto


def quantized(proto):
    """`proto` with ONNX Runtime's dynamic int8 quantization (see the module docstring)."""
    quantization = _extras.require("onnxruntime.quantization", "onnx", "Quantizing to int8")
    import onnx

    with tempfile.TemporaryDirectory() as folder:
        source, target = os.path.join(folder, "f32.onnx"), os.path.join(folder, "int8.onnx")
        onnx.save(proto, source)
        quantization.quantize_dynamic(source, target, per_channel=True,
                                      op_types_to_quantize=["MatMul", "Gemm"],
                                      weight_type=quantization.QuantType.QInt8)
        return onnx.load(target)


def session(model, threads=None):
    """An `onnxruntime.InferenceSession` on the CPU of `model` (a path or an
    `onnx.ModelProto`); `threads`: its intra-op threads (None: ONNX Runtime's default, one
    per physical core)."""
    ort = _extras.require("onnxruntime", "onnx", "Running an ONNX model")
    options = ort.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = int(threads)
    if not isinstance(model, (str, os.PathLike)):
        model = model.SerializeToString()
    return ort.InferenceSession(model if isinstance(model, bytes) else os.fspath(model),
                                options, providers=["CPUExecutionProvider"])


class SessionRunner:
    """A pipeline runner (`kbert.pipelines.model_source.Source.runner`) on an ONNX Runtime
    session: the features it takes, int32, in; its one output (`output`) or its outputs by
    name (None) out, float32."""

    # The pipelines' jit_compile=True compiles a Keras model with XLA; this runs ONNX Runtime.
    not_compiled = "it runs on ONNX Runtime, which optimizes its own graph"

    def __init__(self, session, output=None):
        self.session = session
        self.input_names = [i.name for i in session.get_inputs()]
        self.output_names = [o.name for o in session.get_outputs()]
        self.output = output

    def __call__(self, features):
        values = self.session.run(None, {name: np.asarray(features[name], np.int32)
                                         for name in self.input_names})
        outputs = {name: np.asarray(v, np.float32) for name, v in zip(self.output_names, values)}
        return outputs if self.output is None else outputs[self.output]
