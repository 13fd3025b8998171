"""ONNX exports: a kbert model of token ids in and its raw outputs out, converted by tf2onnx,
run by ONNX Runtime; the tokenizer stays on the host (kbert's, in Python).

The converter is tf2onnx (`tf2onnx.convert.from_function` on the model's call traced with
open batch and length): it is what Keras' own `model.export(format="onnx")` runs under the
TensorFlow backend, called here directly so that the graph is the one `serving_ids` traces
(the same inputs and output names), with additions through tf2onnx's own extension points
(`kbert.serving.onnx_rewrites`): a handler for `Erfc`, which TensorFlow 2.21's exact GELU
emits and tf2onnx 1.17 has none for (`1 - Erf(x)`), and rewriters of the TensorFlow graph
before conversion that give ONNX Runtime the patterns it fuses into single kernels, as it
does on a PyTorch export: Keras' LayerNormalization (moments, then `x * m + (beta - mean *
m)`, or without a beta) as ONNX's `LayerNormalization` op, the exact GELU as `0.5 * x * (1 +
erf(x / sqrt(2)))` (ONNX Runtime's `Gelu`, `BiasGelu` with the dense layer's bias), and a
dense layer on [B, S, H] (`tf.tensordot`: a Reshape to 2-D, MatMul, and a Reshape back by a
shape computed from the input's) as one MatMul of the 3-D input. A pattern that differs is
left as it is (the same numbers, unfused). The attention is traced as transposes and 4-D
matmuls (`kbert.layers.encoder_block.attention_as_matmuls`), and BERT's block
(`TransformerEncoder`) writes its query, key, value and output projections as a MatMul each,
not as a Gemm of the fused projection and Slices of its output. The graph is ONNX opset
`OPSET`, inputs int32 [batch, length] (`token_ids`, `segment_ids` where the model takes
them, `padding_mask`), outputs float32 named as `serving_ids`' (`RAW_OUTPUTS`).

`quantize="int8"` is ONNX Runtime's dynamic quantization (`quantize_dynamic`): the weights of
every dense layer in int8 (after ONNX Runtime's pre-processing, tf2onnx's Gemms written as
MatMul and Add: ONNX Runtime quantizes MatMul, not Gemm, and left 6 of all-MiniLM-L6-v2's 24
dense layers in float32), one scale per output channel, activations quantized per batch at
run time; embedding tables, LayerNorm and softmax stay float32. Per channel because one
scale per matrix moved all-MiniLM-L6-v2's sentence embeddings to a mean cosine of 0.955 with
the float model's on 1,000 real sentences, and per channel to 0.993; quantizing the
embedding tables too gained no speed.

An export (`kbert.export(..., format="onnx")`, `kbert.serving.writer.onnx_directory`) is a
directory: `model.onnx`, `export.json` (`kbert.serving.metadata`) and the tokenizer's files,
which `kbert.pipeline(task, model=directory)` runs. Needs the extra `onnx`.
"""

import os
import tempfile

import numpy as np

from kbert import _extras
from kbert.serving import onnx_rewrites

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

    from kbert.layers.encoder_block import attention_as_matmuls
    from kbert.tasks.graph.signatures import raw_outputs

    dtype = getattr(getattr(model, "dtype_policy", None), "compute_dtype", "float32")
    if dtype != "float32":
        raise ValueError(f"ONNX export converts a float32 model; this one computes in {dtype} "
                         f"(its dtype policy {model.dtype_policy.name!r}). Load it with "
                         f"dtype='float32' (int8 comes from quantize='int8').")
    serve = raw_outputs(model, kind)
    names = ids_inputs(model)
    specs = [tf.TensorSpec([None, None], tf.int32, name) for name in names]

    @tf.function(input_signature=specs)
    def serving_ids(*ids):
        return serve(dict(zip(names, ids)))

    with attention_as_matmuls():  # traced here, inside tf2onnx
        proto, _ = tf2onnx.convert.from_function(
            serving_ids, input_signature=specs, opset=OPSET,
            custom_op_handlers={"Erfc": (onnx_rewrites.erfc, [])},
            custom_rewriter=[onnx_rewrites.fusions])
    return proto


def _gemms_as_matmuls(proto):
    """`proto` (changed in place) with each Gemm of a constant weight (tf2onnx's dense layer
    on 2-D inputs: alpha 1, no transposed input A) as MatMul then Add: ONNX Runtime's dynamic
    quantization makes integer products of MatMul, not of Gemm. Returns `proto`."""
    from onnx import helper, numpy_helper

    graph = proto.graph
    weights = {init.name: init for init in graph.initializer}
    transposed = {}  # a weight -> its transpose's name, made once however many Gemms share it
    nodes = []
    for node in graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type != "Gemm" or node.input[1] not in weights or attrs.get("transA", 0) or \
                attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) not in (0.0, 1.0):
            nodes.append(node)
            continue
        weight = node.input[1]
        if attrs.get("transB", 0):
            if weight not in transposed:
                transposed[weight] = f"{weight}_transposed"
                graph.initializer.append(numpy_helper.from_array(
                    numpy_helper.to_array(weights[weight]).T.copy(), transposed[weight]))
            weight = transposed[weight]
        has_bias = len(node.input) > 2 and node.input[2] and attrs.get("beta", 1.0) == 1.0
        product = f"{node.output[0]}_matmul" if has_bias else node.output[0]
        name = node.name or node.output[0]  # node names are optional, unique where given
        nodes.append(helper.make_node("MatMul", [node.input[0], weight], [product],
                                      name=f"{name}_matmul"))
        if has_bias:
            nodes.append(helper.make_node("Add", [product, node.input[2]], [node.output[0]],
                                          name=f"{name}_bias"))
    del graph.node[:]
    graph.node.extend(nodes)
    return proto


def quantized(proto):
    """`proto` with ONNX Runtime's dynamic int8 quantization (see the module docstring)."""
    quantization = _extras.require("onnxruntime.quantization", "onnx", "Quantizing to int8")
    import onnx

    from onnxruntime.quantization.shape_inference import quant_pre_process

    with tempfile.TemporaryDirectory() as folder:
        source, target = os.path.join(folder, "f32.onnx"), os.path.join(folder, "int8.onnx")
        onnx.save(proto, source)
        # ONNX Runtime's pre-processing (its basic graph optimizations: constant folding, so
        # that a weight reshaped in the graph is a constant), then the Gemms as MatMuls.
        quant_pre_process(source, source, skip_symbolic_shape=True)
        onnx.save(_gemms_as_matmuls(onnx.load(source)), source)
        quantization.quantize_dynamic(source, target, per_channel=True,
                                      op_types_to_quantize=["MatMul"],
                                      weight_type=quantization.QuantType.QInt8)
        return onnx.load(target)


def session(model):
    """An `onnxruntime.InferenceSession` on the CPU of `model` (a path or an
    `onnx.ModelProto`), with ONNX Runtime's defaults (one thread per physical core, every
    graph optimization)."""
    ort = _extras.require("onnxruntime", "onnx", "Running an ONNX model")
    options = ort.SessionOptions()
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
