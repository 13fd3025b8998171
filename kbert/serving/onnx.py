"""ONNX exports: a kbert model of token ids in and its raw outputs out, converted by tf2onnx,
run by ONNX Runtime; the tokenizer stays on the host (kbert's, in Python).

The converter is tf2onnx (`tf2onnx.convert.from_function` on the model's call traced with
open batch and length): it is what Keras' own `model.export(format="onnx")` runs under the
TensorFlow backend, called here directly so that the graph is the one `serving_ids` traces
(the same inputs and output names), with additions through tf2onnx's own extension
points: a handler for `Erfc`, which TensorFlow 2.21's exact GELU emits and tf2onnx 1.17 has
none for (`1 - Erf(x)`), and rewriters of the TensorFlow graph before conversion that
give ONNX Runtime the patterns it fuses into single kernels, as it does on a PyTorch export:
Keras' LayerNormalization (moments, then `x * m + (beta - mean * m)`, or without a beta)
as ONNX's `LayerNormalization` op, the exact GELU as `0.5 * x * (1 + erf(x / sqrt(2)))` (ONNX
Runtime's `Gelu`, `BiasGelu` with the dense layer's bias), and a dense layer on [B, S, H]
(`tf.tensordot`: a Reshape to 2-D, MatMul, and a Reshape back by a shape computed from the
input's) as one MatMul of the 3-D input. A pattern that differs is left as it is (the same
numbers, unfused). The attention is traced as transposes and 4-D matmuls
(`kbert.layers.encoder_block.attention_as_matmuls`), and BERT's block
(`TransformerEncoder`) writes its query, key, value and output projections as a MatMul each,
not as a Gemm of the fused projection and Slices of its output. The graph is ONNX opset
`OPSET`, inputs int32 [batch, length] (`token_ids`, `segment_ids` where the model takes them,
`padding_mask`), outputs float32 named as `serving_ids`' (`RAW_OUTPUTS`).

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


def _source(g, name):
    """The tensor `name` of tf2onnx's graph `g` is a copy of, through Identity and
    StopGradient (`name` itself where it is no copy)."""
    node = g.get_node_by_output(name)
    while node is not None and node.type in ("Identity", "StopGradient"):
        name = node.input[0]
        node = g.get_node_by_output(name)
    return name


def _producer(g, name, *types):
    """The node of tf2onnx's graph `g` that makes the tensor `name`, through Identity and
    StopGradient, if it is one of `types`; else None."""
    node = g.get_node_by_output(_source(g, name))
    return node if node is not None and node.type in types else None


def _constant(g, name):
    """The value (numpy) of the constant tensor `name`, or None where it is not one."""
    node = _producer(g, name, "Const", "ConstV2")
    return None if node is None else node.get_tensor_value(as_list=False)


def _other(node, name):
    """The input of the two-input `node` that is not `name` (None if neither or both)."""
    inputs = list(node.input)
    if len(inputs) != 2 or inputs.count(name) != 1:
        return None
    return inputs[1 - inputs.index(name)]


def _only_consumer(g, name, *types):
    consumers = g.find_output_consumers(name)
    return consumers[0] if len(consumers) == 1 and consumers[0].type in types else None


def _last_axis(g, mean, x):
    """Whether the TensorFlow Mean `mean` reduces `x`'s last axis alone, keeping it."""
    axes, rank = _constant(g, mean.input[1]), g.get_rank(x)
    if axes is None or rank is None or not mean.get_attr_value("keep_dims", False):
        return False
    return [int(a) % rank for a in np.ravel(axes)] == [rank - 1]


def _replace(g, node, op_type, inputs, attr=None):
    """A new ONNX node `op_type` in place of `node`, making its outputs (graph outputs keep
    their names)."""
    outputs = list(node.output)
    shapes, dtypes = [g.get_shape(o) for o in outputs], [g.get_dtype(o) for o in outputs]
    g.remove_node(node.name)
    return g.make_node(op_type, inputs, attr=attr or {}, outputs=outputs, shapes=shapes,
                       dtypes=dtypes)


def _fuse_layer_norm(g, rsqrt):
    """Keras' LayerNormalization around the Rsqrt `rsqrt` as ONNX's LayerNormalization;
    False where the graph is not that pattern."""
    add_eps = _producer(g, rsqrt.input[0], "Add", "AddV2")
    variance = add_eps and next((_producer(g, i, "Mean") for i in add_eps.input
                                 if _producer(g, i, "Mean")), None)
    if variance is None:
        return False
    epsilon = _constant(g, _other(add_eps, variance.output[0]) or "")
    difference = _producer(g, variance.input[0], "SquaredDifference")
    if epsilon is None or epsilon.size != 1 or difference is None:
        return False
    mean = next((_producer(g, i, "Mean") for i in difference.input if _producer(g, i, "Mean")),
                None)
    x = mean and mean.input[0]
    if mean is None or x not in difference.input or not _last_axis(g, mean, x) or \
            not _last_axis(g, variance, variance.input[0]):
        return False
    scale = _only_consumer(g, rsqrt.output[0], "Mul")
    gamma = scale and _constant(g, _other(scale, rsqrt.output[0]) or "")
    if gamma is None:
        return False
    muls = g.find_output_consumers(scale.output[0])
    scaled = next((m for m in muls if m.type == "Mul" and _other(m, scale.output[0]) == x), None)
    shifted = next((m for m in muls if m.type == "Mul" and m is not scaled), None)
    neg = shifted and _producer(g, _other(shifted, scale.output[0]) or "", "Neg")
    if len(muls) != 2 or scaled is None or neg is None or \
            _producer(g, neg.input[0], "Mean") is not mean:
        return False
    bias = _only_consumer(g, shifted.output[0], "Add", "AddV2")
    out = _only_consumer(g, scaled.output[0], "Add", "AddV2")
    width = g.get_shape(x)[-1] if g.get_shape(x) else None
    if bias is None or out is None or not isinstance(width, int) or width <= 0:
        return False
    if bias is out:  # no beta (ModernBERT's): x * m + (-mean * m)
        beta = np.zeros([width], np.float32)
    else:
        beta = _constant(g, _other(bias, shifted.output[0]) or "")
        if beta is None or bias.output[0] not in out.input:
            return False
    if gamma.size != width or beta.size != width:
        return False
    from tf2onnx import utils

    weights = [g.make_const(utils.make_name(f"{out.name}_{n}"),
                            v.reshape(width).astype(np.float32)).output[0]
               for n, v in (("gamma", gamma), ("beta", beta))]
    _replace(g, out, "LayerNormalization", [x, *weights],
             {"axis": -1, "epsilon": float(epsilon.reshape(()))})
    return True


def _is(value, number):
    """Whether `value` (a constant's numpy value, or None) is the scalar `number`, to float32
    precision."""
    return value is not None and value.size == 1 and abs(float(value.reshape(())) - number) < 1e-6


def _fuse_gelu(g, erfc):
    """TensorFlow's exact GELU, `(0.5 * x) * erfc((-x) * 0.70710677)`, around the Erfc `erfc`
    as `(x * (1 + erf(x / sqrt(2)))) * 0.5`; False where the graph is not that pattern."""
    inner = _producer(g, erfc.input[0], "Mul")
    neg = inner and next((_producer(g, i, "Neg") for i in inner.input if _producer(g, i, "Neg")),
                         None)
    half_of = _only_consumer(g, erfc.output[0], "Mul")
    if neg is None or half_of is None:
        return False
    x = neg.input[0]
    factor = _constant(g, _other(inner, neg.output[0]) or "")
    half = _producer(g, _other(half_of, erfc.output[0]) or "", "Mul")
    if not _is(factor, 0.5 ** 0.5) or half is None or x not in half.input or \
            not _is(_constant(g, _other(half, x) or ""), 0.5):
        return False
    from tf2onnx import utils

    def const(value):
        return g.make_const(utils.make_name("gelu"), np.array(value, np.float32)).output[0]

    scaled = g.make_node("Div", [x, const(2 ** 0.5)]).output[0]
    erf = g.make_node("Erf", [scaled]).output[0]
    plus_one = g.make_node("Add", [erf, const(1.0)]).output[0]
    times_x = g.make_node("Mul", [x, plus_one]).output[0]
    _replace(g, half_of, "Mul", [times_x, const(0.5)])
    return True


def _values(g, name):
    """The constant tensor `name`'s values as a list of ints (None where it is no constant)."""
    value = _constant(g, name)
    return None if value is None else [int(v) for v in np.ravel(value)]


def _fold_tensordot(g, reshape):
    """`tf.tensordot` of x [B, S, K] and a matrix [K, N] (Keras' matmul of the two under
    TensorFlow), ending at the Reshape `reshape`: x reshaped to [B x S, K], a MatMul, and a
    Reshape back to [B, S, N] by a shape gathered from x's at run time; as one MatMul of x
    (ONNX's MatMul broadcasts the matrix over B), as a PyTorch export has it: the same
    product, without the Shape, Gather, Concat, Cast and Reshape nodes of each dense layer
    around it (ONNX Runtime runs each as a kernel of its own). False where the graph is not
    that pattern."""
    matmul = _producer(g, reshape.input[0], "MatMul")
    flat = matmul and _producer(g, matmul.input[0], "Reshape")
    if flat is None or len(g.find_output_consumers(matmul.output[0])) != 1 or \
            matmul.get_attr_value("transpose_a", 0) or matmul.get_attr_value("transpose_b", 0):
        return False
    x, weight = _source(g, flat.input[0]), matmul.input[1]
    shape, matrix = g.get_shape(x), g.get_shape(weight)
    # x [B, S, K] to rank 2 with the matrix's K rows after it: [B x S, K], x's rows in order.
    if not shape or len(shape) != 3 or not matrix or len(matrix) != 2 or \
            g.get_rank(flat.output[0]) != 2 or not isinstance(matrix[0], int) or \
            matrix[0] <= 0 or shape[-1] != matrix[0] or not isinstance(matrix[1], int):
        return False
    # Back to concat(shape(x)[[0, 1]], [N]): [B, S, N].
    concat = _producer(g, reshape.input[1], "ConcatV2")
    gather = concat and len(concat.input) == 3 and _producer(g, concat.input[0], "GatherV2")
    dims = gather and _producer(g, gather.input[0], "Shape")
    if not dims or _source(g, dims.input[0]) != x or gather.get_attr_value("batch_dims", 0) or \
            _values(g, gather.input[1]) != [0, 1] or _values(g, gather.input[2]) != [0] or \
            _values(g, concat.input[1]) != [matrix[1]] or _values(g, concat.input[2]) != [0]:
        return False
    _replace(g, reshape, "MatMul", [x, weight])
    return True


def _fusions(g, ops):
    """tf2onnx rewriter: `_fuse_layer_norm`, `_fuse_gelu` and `_fold_tensordot` wherever
    they apply."""
    for node in list(ops):
        if g.get_node_by_name(node.name) is None:  # removed by an earlier fusion
            continue
        if node.type == "Rsqrt":
            _fuse_layer_norm(g, node)
        elif node.type == "Erfc":
            _fuse_gelu(g, node)
        elif node.type == "Reshape":
            _fold_tensordot(g, node)
    return g.get_nodes()


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
            custom_op_handlers={"Erfc": (_erfc, [])}, custom_rewriter=[_fusions])
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
