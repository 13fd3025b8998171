"""Reading a graph or a function of a SavedModel without running it: where an input comes
from, the small constants (shapes, bounds) that an op's inputs fold to, and whether a
`While` loop has an iteration bound (a constant, or the size of a tensor it is given).
`kbert.untrusted.saved_model` uses these to refuse allocations and loops before anything
runs."""

import numpy as np
import tensorflow as tf

# Constants decoded to read shapes and bounds; a bigger one is no shape.
_SMALL = 4096
_PASS_THROUGH = ("Identity", "Snapshot", "StopGradient")


def data_inputs(node):
    """A NodeDef's data inputs: its control inputs ("^name") carry no value."""
    return [i for i in node.input if not i.startswith("^")]


def is_node(source):
    """`Body.source` found a node (not an argument index, not nothing)."""
    return source is not None and not isinstance(source, int)


def elements(shape):
    """Elements of a TensorShapeProto (unknown dimensions count as 1)."""
    count = 1
    for dim in shape.dim:
        count *= max(dim.size, 1) if dim.size >= 0 else 1
    return count


def string_bytes(tensor):
    """The bytes a string TensorProto holds once made: TensorFlow repeats the last of its
    `string_val` up to the shape's elements, so one 1 MB value in a [2**31] constant is 2 PB.
    0 for other dtypes (their elements are capped; a repeated number takes its dtype's size)."""
    if tensor.dtype != tf.string.as_datatype_enum:
        return 0
    if tensor.tensor_content:
        return len(tensor.tensor_content)  # one encoded value per element: no repetition
    values = tensor.string_val
    if not values:
        return 0
    stored = sum(len(v) for v in values)
    return stored + max(elements(tensor.tensor_shape) - len(values), 0) * len(values[-1])


class Body:
    """The nodes of one graph or function, by name, and the function's arguments."""

    def __init__(self, name, nodes, function=None):
        self.name = name  # None: the main graph
        self.nodes = {node.name: node for node in nodes}
        self.arguments = ({arg.name: i for i, arg in enumerate(function.signature.input_arg)}
                          if function is not None else {})
        self.function = function
        self._folded = {}  # tensor -> its folded value (or None), see `array`

    def source(self, tensor):
        """What makes `tensor` (an input string): a NodeDef, or the argument's index (int),
        following Identity; None if nothing does."""
        for _ in range(1000):
            name = tensor.lstrip("^").split(":")[0]
            if name in self.nodes:
                node = self.nodes[name]
                if node.op not in _PASS_THROUGH or not node.input:
                    return node
                tensor = node.input[0]
            else:
                return self.arguments.get(name)
        return None

    def array(self, tensor, depth=0):
        """The value of `tensor` as a numpy array when it folds to a small constant, else
        None. Folds `Const` and, on small constant inputs, the arithmetic a graph computes
        shapes and bounds with (`Cast`, `Pack`, `ConcatV2`, `Mul`, `Pow`, `Maximum`, `Prod`,
        ...) in the tensors' own dtypes, as TensorFlow would (int32 products wrap around); a
        float cast to an integer folds when it is finite and in the integer's range."""
        key = tensor.lstrip("^")
        if key not in self._folded:
            self._folded[key] = None  # a cycle folds to nothing
            try:
                with np.errstate(all="ignore"):
                    value = self._fold(key, depth)
            except Exception:  # noqa: BLE001  (what does not fold is no constant)
                value = None
            if value is not None:
                value = np.asarray(value)
                if value.size > _SMALL:
                    value = None
            self._folded[key] = value
        return self._folded[key]

    def _fold(self, tensor, depth):
        node = self.source(tensor)
        if not is_node(node) or depth > _DEPTH:
            return None
        inputs = data_inputs(node)
        if node.op == "Const":
            if "value" not in node.attr:
                return None
            value = node.attr["value"].tensor
            if elements(value.tensor_shape) > _SMALL:
                return None
            return tf.make_ndarray(value)
        values = [self.array(i, depth + 1) for i in inputs]
        if any(v is None for v in values):
            return None
        if node.op == "Cast" and values:
            return _cast(values[0], node.attr["DstT"].type)
        if node.op in _ELEMENTWISE and len(values) == 2 and _numeric(*values):
            if np.prod(np.broadcast_shapes(*(v.shape for v in values))) > _SMALL:
                return None  # an outer product is no shape; never computed here
            return _ELEMENTWISE[node.op](*values)
        if node.op == "Neg" and values and _numeric(values[0]):
            return np.negative(values[0])
        if node.op == "Pack" and values:
            return np.stack(values, axis=node.attr["axis"].i)
        if node.op == "ConcatV2" and len(values) > 1:
            return np.concatenate(values[:-1], axis=int(values[-1]))
        if node.op in _REDUCTIONS and len(values) == 2 and _numeric(values[0]):
            keep = node.attr["keep_dims"].b if "keep_dims" in node.attr else False
            axis = tuple(int(a) for a in values[1].reshape(-1))
            return _REDUCTIONS[node.op](values[0], axis=axis, keepdims=keep)
        if node.op == "Reshape" and len(values) == 2:
            return values[0].reshape([int(d) for d in values[1].reshape(-1)])
        if node.op == "ExpandDims" and len(values) == 2:
            return np.expand_dims(values[0], int(values[1]))
        return None

    def scalar(self, tensor):
        """A constant integer scalar (or one-element) `tensor`, else None."""
        value = self.array(tensor)
        if value is None or value.size != 1 or not np.issubdtype(value.dtype, np.integer):
            return None
        return int(value.reshape(-1)[0])

    def dims(self, tensor, depth=0):
        """A shape vector `tensor` as a list of ints (None where a dimension is not a
        constant), or None when not even its length is known. A shape that folds (`array`)
        is known whole; else `Pack` and `ConcatV2` of what folds give the known parts."""
        value = self.array(tensor)
        if value is not None:
            if not np.issubdtype(value.dtype, np.integer):
                return None
            return [int(v) for v in value.reshape(-1)]
        node = self.source(tensor)
        if not is_node(node) or depth > _DEPTH:
            return None
        inputs = data_inputs(node)
        if node.op == "Cast" and inputs:
            return self.dims(inputs[0], depth + 1)
        if node.op == "Pack":
            return [self.scalar(i) for i in inputs]
        if node.op == "ConcatV2" and inputs:
            parts = [self.dims(i, depth + 1) for i in inputs[:-1]]
            return None if any(p is None for p in parts) else [d for p in parts for d in p]
        return None


def _numeric(*values):
    return all(v.dtype.kind in "iufb" for v in values)


def _cast(value, dtype_enum):
    """`Cast` as TensorFlow does it, where that is well defined: a float to an integer only
    when finite and in the integer's range (then truncated); else None (not folded)."""
    target = tf.as_dtype(dtype_enum).as_numpy_dtype
    if value.dtype.kind not in "iufb" or np.dtype(target).kind not in "iufb":
        return None
    if value.dtype.kind in "fc" and np.dtype(target).kind in "iu":
        info = np.iinfo(target)
        if not np.all(np.isfinite(value)) or np.any(value < info.min) or np.any(
                value > info.max):
            return None
        return np.trunc(value).astype(target)
    return value.astype(target)


def _floor_divide(a, b):
    if np.any(b == 0):
        return None
    return np.floor_divide(a, b)


def _power(a, b):
    if np.issubdtype(b.dtype, np.integer) and np.any(b < 0):
        return None  # TensorFlow refuses negative integer powers
    return np.power(a, b)


_DEPTH = 40
_ELEMENTWISE = {
    "Add": np.add, "AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply,
    "Maximum": np.maximum, "Minimum": np.minimum, "FloorDiv": _floor_divide, "Pow": _power,
}
_REDUCTIONS = {  # in the input's dtype, as TensorFlow reduces (numpy would widen int32)
    "Prod": lambda v, **kw: np.prod(v, dtype=v.dtype, **kw),
    "Sum": lambda v, **kw: np.sum(v, dtype=v.dtype, **kw), "Max": np.max, "Min": np.min,
}


def known_elements(dims):
    """The product of the known, positive dimensions; 0 if one is 0."""
    count = 1
    for dim in dims:
        if dim == 0:
            return 0
        if dim is not None and dim > 0:
            count *= dim
    return count


def range_elements(body, inputs):
    """Elements of `Range` / `RaggedRange` (start, limit, delta) when all three are
    constants, else None."""
    values = [body.array(i) for i in inputs[:3]]
    if len(values) < 3 or any(v is None or v.dtype == object for v in values):
        return None
    start, limit, delta = np.broadcast_arrays(*[v.astype(np.float64) for v in values])
    delta = np.where(delta == 0, 1, delta)
    with np.errstate(all="ignore"):
        total = float(np.maximum(np.ceil((limit - start) / delta), 0).sum())
    return None if np.isnan(total) else int(min(total, 2.0**63))  # inf: past any cap


def from_first_argument(body, tensor, depth=0):
    """`tensor` is a file name made from the function's argument 0 only: the argument itself,
    or `StringJoin` / `ShardedFilename` / `Pack` of it with constant suffixes that stay beside
    it (no "..", not absolute). How TensorFlow's checkpoint functions name their files."""
    source = body.source(tensor)
    if isinstance(source, int):
        return source == 0
    if source is None or depth > 10:
        return False
    inputs = data_inputs(source)
    if source.op in ("StringJoin", "ShardedFilename"):
        return bool(inputs) and from_first_argument(body, inputs[0], depth + 1) and all(
            _suffix(body, i) for i in inputs[1:])
    if source.op == "Pack":
        return all(from_first_argument(body, i, depth + 1) for i in inputs)
    return False


def _suffix(body, tensor):
    source = body.source(tensor)
    if is_node(source) and source.op in ("Select", "SelectV2"):
        return all(_suffix(body, i) for i in source.input[1:3])
    value = body.array(tensor)
    if value is None:
        return False
    if value.dtype != object:
        return True  # the shard numbers of ShardedFilename
    texts = [v.decode("utf-8", "replace") for v in value.reshape(-1)]
    return all(".." not in t and not t.startswith(("/", "\\")) for t in texts)


def function_names(attr):
    """The functions an AttrValue names (func, list of func), nested attributes included."""
    found = []
    funcs = list(attr.list.func) + ([attr.func] if attr.HasField("func") else [])
    for func in funcs:
        found.append(func.name)
        for inner in func.attr.values():
            found += function_names(inner)
    return found
