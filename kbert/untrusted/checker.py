"""The check of every node of a SavedModel's graphs (`kbert.untrusted.check_saved_model`
describes what is refused): ops against `kbert.untrusted.ops`, constant sizes, loops' bounds,
checkpoint paths, lookup tables filled at load, and calls into load-time functions."""

import numpy as np

from kbert.untrusted import ops as allowed
from kbert.untrusted.files import UnsafeSavedModelError, check_files
from kbert.untrusted.graph import (
    data_inputs, elements, from_first_argument, is_node, known_elements, range_elements,
    string_bytes,
)
from kbert.untrusted.library import Library
from kbert.untrusted.loops import loop_bound, size_bound

DEFAULT_MAX_ELEMENTS = 2**31
# The largest constant part of a loop's `maximum_iterations` (a constant bound, or the
# constants added to sizes): kbert's BPE loop adds 1 to a size.
DEFAULT_MAX_LOOP_CONSTANT = 1024
# At most this many sizes summed in one loop bound (kbert's: one).
MAX_BOUND_TERMS = 4


class Checker(Library):
    """Checks every node; `run` raises `UnsafeSavedModelError` naming all problems found."""

    def __init__(self, saved, directory, max_elements,
                 max_loop_constant=DEFAULT_MAX_LOOP_CONSTANT):
        super().__init__(saved, directory)
        self.max_elements, self.max_loop_constant = max_elements, max_loop_constant
        self.problems = []  # (0: known harm, 1: unknown op; the message)
        self.filled = [0, 0, None]  # elements and bytes filled into tables at load, a fill

    def run(self):
        check_files(self.directory, self.meta, self.max_elements)
        self._check_recursion()
        self._check_call_expansion()
        checkpoint = self._checkpoint_functions()
        load_time = self._load_time_functions()
        self._check_calls_into_load_time(load_time)
        for body in self.bodies:
            for node in body.nodes.values():
                self._check_node(body, node, body.name in checkpoint,
                                 load_time.get(body.name))
        count, size, fill = self.filled
        if count > self.max_elements or size > self.max_elements:
            self.refuse(*fill, f"is one of the fills that put {count:,} elements "
                               f"({size:,} bytes of strings) into lookup tables at load, "
                               f"over max_elements={self.max_elements:,} (elements, and "
                               f"bytes) in all.")
        if self.problems:
            # What is known to be harmful first (files, Python, sizes, loops), then the
            # merely unknown ops.
            self.problems.sort(key=lambda problem: problem[0])
            first, others = self.problems[0][1], [p for _, p in self.problems[1:]]
            more = (f"\n{len(others)} more: " + "; ".join(others[:5])
                    + (" ..." if len(others) > 5 else "")) if others else ""
            raise UnsafeSavedModelError(f"{self.directory}: {first}{more}\n{allowed.ALLOWED}")

    def refuse(self, body, node, why, harm=True):
        """Notes a problem; all are reported together once every node is seen."""
        self.problems.append((0 if harm else 1, self.describe(body, node, why)))

    def _check_calls_into_load_time(self, load_time):
        """The functions that run inside tf.saved_model.load are called only by the loader
        (with the inputs the object graph binds), by one another, or by the main graph's
        init call (TensorFlow's TF1-compatible init op, which passes constants and the
        resource handles it made): a serving function calling a table's initializer would fill
        it with the request's data, which the check of the fill (against the bound inputs)
        would not see."""
        main = self.bodies[0]
        for callee in sorted(load_time):
            for caller, node in self.callers.get(callee, []):
                if caller is None:
                    made = [main.source(i) for i in data_inputs(node)]
                    computed = [i for i, source in zip(data_inputs(node), made) if not (
                        is_node(source) and source.op in _MAIN_GRAPH_INIT_INPUTS)]
                    if computed:
                        self.refuse(main, node, f"calls {callee!r}, which runs inside "
                                                f"tf.saved_model.load ({load_time[callee]}), "
                                                f"with {computed[0]!r}, which is no constant "
                                                f"nor resource of the main graph.")
                elif caller not in load_time:
                    self.refuse(self.body_of[caller], node,
                                f"calls {callee!r}, which runs inside tf.saved_model.load "
                                f"({load_time[callee]}), from a function that runs after "
                                f"it (e.g. while serving, with the request's data): kbert's "
                                f"exports never call a load-time function again.")

    # === One node ===
    def _check_node(self, body, node, in_checkpoint, load_time=None):
        if node.op in ("While", "StatelessWhile"):
            self._check_loop(body, node)
        if node.op in allowed.CHECKPOINT_OPS and in_checkpoint:
            self._check_checkpoint_path(body, node)
        elif node.op in allowed.TABLE_FILE_OPS:
            self.refuse(body, node, self._table_file(body, node))
        elif node.op in allowed.TABLE_FILL_OPS:
            self._check_table_fill(body, node, load_time)
        elif node.op not in self.functions and node.op not in allowed.ALLOWED_OPS:
            why, harm = allowed.why_refused(node.op)
            self.refuse(body, node, why, harm)
        for attr in node.attr.values():
            tensors = list(attr.list.tensor) + ([attr.tensor] if attr.HasField("tensor") else [])
            for tensor in tensors:
                if elements(tensor.tensor_shape) > self.max_elements:
                    shape = [d.size for d in tensor.tensor_shape.dim]
                    self.refuse(body, node, f"is a constant of shape {shape} "
                                            f"({elements(tensor.tensor_shape):,} elements), "
                                            f"over max_elements={self.max_elements:,}.")
                elif string_bytes(tensor) > self.max_elements:
                    shape = [d.size for d in tensor.tensor_shape.dim]
                    self.refuse(body, node, f"is a string constant of shape {shape} that "
                                            f"expands to {string_bytes(tensor):,} bytes (its "
                                            f"last value repeated to fill the shape), over "
                                            f"max_elements={self.max_elements:,} bytes.")
        inputs = data_inputs(node)
        sized = self._check_sizes(body, node, inputs, load_time)
        if load_time and not sized and node.op not in self.functions and \
                node.op not in allowed.LOAD_TIME_OPS:
            self.refuse(body, node, f"runs inside tf.saved_model.load ({load_time}), where "
                                    f"kbert's exports run only "
                                    f"{', '.join(sorted(allowed.LOAD_TIME_OPS))}.", harm=False)

    def _check_sizes(self, body, node, inputs, load_time):
        """Refuses an allocation over the cap, and at load time one whose size is not a
        constant (never counted as 1); says whether it refused."""
        before = len(self.problems)
        for index in allowed.SHAPE_INPUTS.get(node.op, ()):
            dims = body.dims(inputs[index]) if index < len(inputs) else None
            if dims is not None and known_elements(dims) > self.max_elements:
                self.refuse(body, node, f"would allocate a tensor of shape {dims} (at least "
                                        f"{known_elements(dims):,} elements), over "
                                        f"max_elements={self.max_elements:,}.")
            elif load_time and (dims is None or None in dims):
                self.refuse(body, node, f"would allocate a tensor whose shape "
                                        f"({'unknown' if dims is None else dims}) is no "
                                        f"constant, inside tf.saved_model.load ({load_time}).")
        if node.op in allowed.PADDING_OPS:
            paddings = body.array(inputs[1]) if len(inputs) > 1 else None
            if paddings is None or not np.issubdtype(paddings.dtype, np.integer):
                self.refuse(body, node, "pads by amounts that are no constant (kbert's "
                                        "exports pad by constants only).")
            else:  # each axis grows by its paddings: at least prod(1 + before + after)
                growth = float(np.prod(1.0 + np.abs(paddings.astype(np.float64)).reshape(
                    -1, 2).sum(axis=1)))
                if growth > self.max_elements:
                    self.refuse(body, node, f"pads to at least {min(growth, 2.0**63):,.0f} "
                                            f"elements (paddings {paddings.tolist()}), over "
                                            f"max_elements={self.max_elements:,}.")
        if node.op in allowed.RANGE_OPS:
            count = range_elements(body, inputs)
            if count is not None and count > self.max_elements:
                self.refuse(body, node, f"would make {count:,} elements, over "
                                        f"max_elements={self.max_elements:,}.")
            elif load_time and count is None:
                self.refuse(body, node, f"would make a number of elements that is no "
                                        f"constant, inside tf.saved_model.load ({load_time}).")
        return len(self.problems) > before

    def _check_loop(self, body, node):
        """A loop passes when it runs in no other loop and its iterations are bounded by a
        constant up to `max_loop_constant` or by the size of tensors it is given plus such a
        constant (`kbert.untrusted.loops.size_bound`); its condition and body are functions of
        the library, checked as every other."""
        if body.name in self.in_loop:
            outer_body, outer = self.in_loop[body.name]
            self.refuse(body, node, f"is a loop inside another loop (the {outer.op} node "
                                    f"{outer.name!r} in {self.where(outer_body.name)} runs "
                                    f"it in its condition or body): iterations multiply "
                                    f"(size**depth). kbert's exports nest no loops.")
            return
        bound = loop_bound(body, node, self.functions)
        if bound is None:
            self.refuse(body, node, f"is a loop with no iteration bound (cond "
                                    f"{node.attr['cond'].func.name!r}, no "
                                    f"maximum_iterations): it may never return.")
        elif isinstance(bound, int):
            if bound > self.max_loop_constant:
                self.refuse(body, node, f"is a loop of {bound:,} iterations (a constant "
                                        f"maximum_iterations), over max_loop_constant="
                                        f"{self.max_loop_constant:,}.")
        elif size_bound(body, bound, self.max_loop_constant, MAX_BOUND_TERMS) is None:
            source = body.source(bound)
            made_by = f"node {source.name!r} ({source.op})" if is_node(source) else (
                "an argument of the function" if isinstance(source, int) else "nothing")
            self.refuse(body, node, f"is a loop whose maximum_iterations is computed by "
                                    f"{made_by}, not the size of tensors it is given (Size or "
                                    f"a dimension of Shape, at most {MAX_BOUND_TERMS} summed) "
                                    f"plus constants up to max_loop_constant="
                                    f"{self.max_loop_constant:,}: its number of iterations "
                                    f"has no bound the check can see.")

    def _check_checkpoint_path(self, body, node):
        """In the loader's own checkpoint functions, files are named only from the path the
        loader passes (argument 0), with constant suffixes that stay beside it."""
        inputs = data_inputs(node)
        for index in allowed.CHECKPOINT_OPS[node.op]:
            if index >= len(inputs) or not from_first_argument(body, inputs[index]):
                self.refuse(body, node, f"names a checkpoint file that is not the loader's "
                                        f"variables/ path (its input {index}).")

    def _captured(self, body, argument):
        """The object-graph node that the SavedModel binds to `body`'s argument `argument`
        (a captured constant, variable, resource or asset), else None (the caller's)."""
        if body.name not in self.objects.concrete_functions or any(
                caller is not None for caller, _ in self.callers.get(body.name, [])):
            return None  # a function of the library calls it: its caller passes the inputs
        bound = self.objects.concrete_functions[body.name].bound_inputs
        first_bound = len(body.arguments) - len(bound)
        if argument < first_bound or not 0 <= bound[argument - first_bound] < len(
                self.objects.nodes):
            return None
        return self.objects.nodes[bound[argument - first_bound]]

    def _constant(self, body, tensor):
        """Where `tensor` comes from, when it is no constant of the SavedModel; None when it
        is one: a `Const` node of `body`, or an argument the SavedModel binds to a captured
        constant (an object-graph constant naming a `Const` of the main graph)."""
        source = body.source(tensor)
        if is_node(source):
            return None if source.op == "Const" else f"node {source.name!r} ({source.op})"
        if source is None:
            return "nothing"
        captured = self._captured(body, source)
        if captured is None:
            return f"the function's argument {source}, which the caller passes"
        kind = captured.WhichOneof("kind")
        if kind != "constant":
            return f"a captured {kind} of the SavedModel"
        made = self.bodies[0].nodes.get(captured.constant.operation)
        if made is None or made.op != "Const":
            return (f"a captured constant naming {captured.constant.operation!r} of the main "
                    f"graph, which is {'no node' if made is None else 'a ' + made.op}")
        return None

    def _check_table_fill(self, body, node, load_time):
        """A hash table is filled once, inside tf.saved_model.load (a resource's
        `_initialize`), with keys and values that are constants of the SavedModel: its
        contents are data the check has read (and capped by `max_elements`), no file and
        nothing of the request, and it never grows while serving."""
        if not load_time:
            self.refuse(body, node, "fills a lookup table outside tf.saved_model.load (kbert's "
                                    "exports fill theirs once, at load, from constants; a "
                                    "table filled while serving may grow with the requests).")
            return
        inputs = data_inputs(node)
        for index in allowed.TABLE_FILL_OPS[node.op]:
            origin = self._constant(body, inputs[index]) if index < len(inputs) else "nothing"
            if origin is not None:
                self.refuse(body, node, f"fills a lookup table (its input {index}) from "
                                        f"{origin}, not from a constant of the SavedModel.")
                continue
            source = body.source(inputs[index])
            const = source if is_node(source) else self.bodies[0].nodes[
                self._captured(body, source).constant.operation]
            value = const.attr["value"].tensor
            self.filled[0] += elements(value.tensor_shape)
            self.filled[1] += string_bytes(value)
            self.filled[2] = (body, node)

    def _table_file(self, body, node):
        """Why a table read from a file is refused, saying where the file name comes from:
        an asset of the SavedModel, a path written in the graph, or the caller (the request)."""
        inputs = data_inputs(node)
        source = body.source(inputs[1]) if len(inputs) > 1 else None
        origin = f"node {source.name!r}" if source is not None and not isinstance(
            source, int) else "nothing"
        if isinstance(source, int):
            origin = f"the function's argument {source} (from the caller: the request)"
            captured = self._captured(body, source)
            if captured is not None:
                origin = f"a captured {captured.WhichOneof('kind')} of the SavedModel"
        elif source is not None and source.op == "Const":
            value = body.array(inputs[1])
            path = value.reshape(-1)[0].decode("utf-8", "replace") if value is not None and \
                value.size == 1 and value.dtype == object else "?"
            origin = f"the path {path!r} written in the graph"
        return (f"reads a lookup table from a file named by {origin}. kbert's exports hold "
                f"their vocabularies in the graph and read no files.")


# What the main graph's init call may pass a load-time function: constants and the resources
# it makes (kbert's: the hash table and the constants that fill it).
_MAIN_GRAPH_INIT_INPUTS = frozenset({"Const", "HashTableV2", "SentencepieceOp",
                                     "VarHandleOp"})
