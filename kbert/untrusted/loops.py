"""Whether a `While` loop of a SavedModel has an iteration bound the check can see: a constant,
or a sum of sizes of tensors the loop is given plus constants (`kbert.untrusted.checker`)."""

import tensorflow as tf

from kbert.untrusted.graph import _DEPTH, Body, data_inputs, is_node


def loop_bound(body, node, functions):
    """The iteration bound of a `While` / `StatelessWhile` as `tf.while_loop` writes it, or
    None where the loop has none.

    `tf.while_loop(..., maximum_iterations=n)` passes a counter (from 0) and `n` as the
    loop's first two inputs; its `cond` is `counter < n and <the user's condition>` and its
    `body` adds 1 to the counter. Returns `n` (an int) when it folds to a constant, the tensor
    (its input name, a str) when it is computed, or None.
    """
    inputs = data_inputs(node)
    cond = functions.get(node.attr["cond"].func.name)
    loop = functions.get(node.attr["body"].func.name)
    if len(inputs) < 2 or cond is None or loop is None or body.scalar(inputs[0]) != 0:
        return None
    bound = body.scalar(inputs[1])
    if bound is not None and bound < 0:  # while_v2 passes -1 for "no maximum_iterations"
        return None
    if not (_compares_counter(cond) and _counts(loop)):
        return None
    return inputs[1] if bound is None else bound


def size_bound(body, tensor, max_constant, max_terms=4):
    """How a computed loop bound `tensor` is bounded by what is already in memory, or None.

    Bounded: a sum of at most `max_terms` terms that are each the number of elements of a
    tensor (`Size`) or one of its dimensions (an element of `Shape` taken with a constant
    index by `StridedSlice` or `GatherV2`), or a cast of these, plus constants in
    `0..max_constant` in all (sums and maxima count alike; a maximum is at most the sum): a
    loop cannot run more often than `max_terms` times the elements of tensors it was given,
    plus a small constant. A term that is used twice counts twice (`Add(s, s)` is two
    terms), so that sums of sums cannot double a size forty times over. Any tensor counts,
    the request's bytes (`Size` of `tf.strings.bytes_split(text)`) included: it is already
    in memory, so the loop's steps are linear in what was allocated before it. Returns a few
    words naming the tensors, e.g. "Size of 'while/ids' + 1"."""
    terms = _bound_terms(body, tensor, max_terms, 0)
    if terms is None:
        return None
    sizes, constant = terms
    if len(sizes) > max_terms or not 0 <= constant <= max_constant:
        return None
    return " + ".join(sizes + ([str(constant)] if constant or not sizes else []))


def _bound_terms(body, tensor, max_terms, depth):
    """([size terms], the sum of constants) of a bound (see `size_bound`), else None."""
    node = body.source(tensor)
    if isinstance(node, int) or depth > _DEPTH:
        return None  # an argument: a number from the caller, not a size
    constant = body.scalar(tensor)
    if constant is not None:
        return ([], constant) if constant >= 0 else None
    if not is_node(node):
        return None
    inputs = data_inputs(node)
    if node.op == "Size" and inputs:
        return [f"Size of {inputs[0].split(':')[0]!r}"], 0
    if node.op == "Cast" and inputs and tf.as_dtype(node.attr["DstT"].type).is_integer:
        return _bound_terms(body, inputs[0], max_terms, depth + 1)
    if node.op in ("StridedSlice", "GatherV2") and len(inputs) >= 2:
        shape = body.source(inputs[0])
        index = body.array(inputs[1])
        if is_node(shape) and shape.op == "Shape" and shape.input and index is not None and \
                index.size == 1 and (node.op == "GatherV2" or _one_element(node)):
            return [f"Shape of {shape.input[0].split(':')[0]!r}"], 0
        return None
    if node.op in ("Add", "AddV2", "Maximum") and len(inputs) == 2:
        sizes, constant = [], 0
        for i in inputs:
            part = _bound_terms(body, i, max_terms, depth + 1)
            if part is None:
                return None
            sizes, constant = sizes + part[0], constant + part[1]
            if len(sizes) > max_terms:
                return None  # stop early: a DAG of sums doubles at each level
        return sizes, constant
    return None


def _one_element(node):
    """A StridedSlice that takes one element: shrink_axis_mask on its only axis."""
    return node.attr["shrink_axis_mask"].i == 1 and not any(
        node.attr[mask].i for mask in ("ellipsis_mask", "new_axis_mask"))


def _compares_counter(cond):
    """The condition's output is `Less(arg 0, arg 1)`, or a LogicalAnd with it."""
    inner = Body(cond.signature.name, cond.node_def, cond)
    outputs = list(cond.ret.values())
    if len(outputs) != 1:
        return False
    node = inner.source(outputs[0])
    if not is_node(node):
        return False
    candidates = [node]
    if node.op == "LogicalAnd":
        candidates = [inner.source(i) for i in data_inputs(node)]
    return any(is_node(c) and c.op == "Less"
               and [inner.source(i) for i in c.input[:2]] == [0, 1] for c in candidates)


def _counts(loop):
    """The body's first output is `arg 0 + 1`, and its second passes arg 1 on unchanged."""
    inner = Body(loop.signature.name, loop.node_def, loop)
    if len(loop.signature.output_arg) < 2:
        return False
    first = inner.source(loop.ret[loop.signature.output_arg[0].name])
    second = inner.source(loop.ret[loop.signature.output_arg[1].name])
    if not is_node(first) or first.op not in ("AddV2", "Add"):
        return False
    operands = [inner.source(i) for i in first.input[:2]]
    return second == 1 and 0 in operands and any(
        inner.scalar(i) == 1 for i in first.input[:2])
