"""tf2onnx's extension points as `kbert.serving.onnx` uses them: a handler for TensorFlow's
`Erfc` (`erfc`), and a rewriter of the TensorFlow graph before conversion (`fusions`) that
gives ONNX Runtime the patterns it fuses into single kernels, as it does on a PyTorch
export: Keras' LayerNormalization as ONNX's `LayerNormalization` op, the exact GELU in the
erf form of ONNX Runtime's `Gelu` / `BiasGelu`, and `tf.tensordot` of a dense layer on [B,
S, H] as one 3-D MatMul. A pattern that differs is left as it is (the same numbers,
unfused). See `kbert.serving.onnx`'s docstring for what each bought."""

import numpy as np


def erfc(ctx, node, name, args):
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


def fusions(g, ops):
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
