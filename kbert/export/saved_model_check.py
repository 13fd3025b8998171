"""SavedModels from elsewhere are checked before anything in them runs.

A SavedModel is a program: `tf.saved_model.load` runs its resource initializers and restore
functions, and its signatures run whatever ops its graph holds: reading and writing files,
Python callbacks, allocations of any size, loops that never end. `check_saved_model` reads
`saved_model.pb` as a protocol buffer, runs nothing, and refuses what kbert's own exports never
contain (`kbert.export.saved_model_ops`). `load_saved_model` copies the directory, checks the
copy and loads it: every kbert path that loads a SavedModel goes through it.

Two things kbert's own exports hold need more than an op list (RoBERTa's byte-level BPE,
`kbert.tokenizers.BytePairTokenizer`):
  - a `While` loop (merge pairs until none applies). A loop passes when `tf.while_loop`'s
    counter against `maximum_iterations` bounds it, and that bound is either a constant up
    to `max_loop_constant` (1024), or a sum of at most `MAX_BOUND_TERMS` (4) sizes of
    tensors the loop is given (`Size` of a tensor, or one dimension of its `Shape`), plus
    constants adding up to at most `max_loop_constant`. Any tensor's size counts, the
    request's bytes (`Size` of `tf.strings.bytes_split(text)`) included: the tensor is
    already in memory, so the loop's steps are linear in what was allocated before it (a
    linear bound in the input's size). kbert's loop says `maximum_iterations=size(ids) + 1`
    (each step but the last merges a pair, one id fewer). A bound computed any other way (a
    string's length as a number, a product of sizes, a size added to itself more than 4
    times, a big constant) or none is refused. A loop that runs inside another loop (in its
    condition or body, or in a function they call) is refused however it is bounded: the
    steps would multiply (size**depth); kbert's exports nest no loops. The condition and the
    body are functions of the library and pass the same check as every function (a file op
    in a body is refused); the ops that would accumulate a tensor per step (TensorList,
    TensorArray) are not allowed. Per step a body allocates what the ops outside a loop may:
    sizes computed from the request are not bounded, in a loop or not (below);
  - a hash table filled at load (the merge table: `HashTableV2` made by the resource's
    `_create_resource`, `LookupTableImportV2` in its `_initialize`). It passes when its keys
    and values are constants of the SavedModel (a `Const`, or a captured constant of the object
    graph that names a `Const`): data the check has read and capped (all the tables' fills
    together: `max_elements` elements and `max_elements` bytes of strings, each string
    constant counted as it expands, its last value repeated up to its shape), no file,
    nothing of the
    request. Filling a table while serving, from the request, and mutable tables (which grow
    with the requests) are refused. The bound inputs of the object graph are trusted only for
    a function no function of the library calls; a call into a load-time function from a
    function that runs later (a serving function calling the table's initializer with the
    request's strings) is refused, and the main graph's init call may pass it only constants
    and the resources it makes.

What it cannot see (a check of ops is not a sandbox): sizes computed at call time (from the
request, a huge batch or a long text, or in the graph from it) and bugs in TensorFlow's
kernels or its protobuf parser. Load only what you could also run as code.
"""

import logging
import os
import shutil
import tempfile
import weakref
from collections import Counter, defaultdict

import numpy as np

from kbert.export import saved_model_ops as allowed
from kbert.export.saved_model_files import (
    UnsafeSavedModelError, check_files, copy_saved_model, read_saved_model,
)
from kbert.export.saved_model_graph import (
    Body, data_inputs, elements, string_bytes, from_first_argument, function_names, is_node,
    known_elements, loop_bound, range_elements, size_bound,
)

DEFAULT_MAX_ELEMENTS = 2**31
# The largest constant part of a loop's `maximum_iterations` (a constant bound, or the
# constants added to sizes): kbert's BPE loop adds 1 to a size.
DEFAULT_MAX_LOOP_CONSTANT = 1024
# At most this many sizes summed in one loop bound (kbert's: one).
MAX_BOUND_TERMS = 4
# The most nodes one function may run with its calls expanded (`_check_call_expansion`).
MAX_EXPANDED_NODES = 10**6
logger = logging.getLogger(__name__)
__all__ = ["UnsafeSavedModelError", "check_saved_model", "load_saved_model"]

# The children of a resource that `tf.saved_model.load` calls itself.
_RESOURCE_FUNCTIONS = ("_create_resource", "_initialize", "_destroy_resource")


def load_saved_model(path, *, trusted=False, max_elements=DEFAULT_MAX_ELEMENTS,
                     max_loop_constant=DEFAULT_MAX_LOOP_CONSTANT):
    """`check_saved_model` then `tf.saved_model.load`, on a private copy of `path`.

    The directory is first copied into a new temporary directory of its own (readable by this
    user only), so that what is checked is what is loaded even if `path` changes meanwhile;
    the copy is removed when the returned object is garbage-collected. It takes as much disk
    as the SavedModel (variables/ included), under `tempfile.gettempdir()` (`TMPDIR`). Links
    and anything but regular files are refused while copying, never followed.

    Args:
        path: the SavedModel directory.
        trusted: skip the check (logged as a warning) and the copy: only for SavedModels you
            could also run as code, e.g. your own.
        max_elements: the largest tensor a constant shape may allocate.
        max_loop_constant: the largest constant part of a loop's iteration bound.
    """
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops kbert's exports use)

    directory = os.path.realpath(os.fspath(path))
    if trusted:
        logger.warning("NOT CHECKING the SavedModel %s (trusted=True): whatever its graph "
                       "holds runs, file and Python ops included.", directory)
        return tf.saved_model.load(directory)
    private = os.path.realpath(tempfile.mkdtemp(prefix="kbert-saved-model-"))
    try:
        copy = os.path.join(private, "saved_model")
        try:
            copy_saved_model(directory, copy)
            check_saved_model(copy, max_elements=max_elements,
                              max_loop_constant=max_loop_constant)
        except UnsafeSavedModelError as e:  # named as the caller knows it
            raise UnsafeSavedModelError(str(e).replace(copy, directory)) from None
        loaded = tf.saved_model.load(copy)
    except BaseException:
        shutil.rmtree(private, ignore_errors=True)
        raise
    # Assets are read from the copy: it lives as long as the loaded object.
    weakref.finalize(loaded, shutil.rmtree, private, ignore_errors=True)
    return loaded


def check_saved_model(path, *, max_elements=DEFAULT_MAX_ELEMENTS,
                      max_loop_constant=DEFAULT_MAX_LOOP_CONSTANT):
    """Refuses a SavedModel holding anything kbert's own exports do not, before it runs.

    Reads the directory's files and `saved_model.pb` (or `.pbtxt`) as a protocol buffer and
    walks every graph and every function of its library (signatures, resource initializers,
    the checkpoint functions, and the functions that `While`, `If` and calls name). Refused:
      - an op outside `kbert.export.saved_model_ops.ALLOWED_OPS`: file reads and writes,
        Python callbacks, summary and record writers, anything else kbert never exports;
        checkpoint ops (`SaveV2`, `RestoreV2`, ...) are allowed only in the functions the
        SavedModel's `saver_def` names and nothing else calls (the object graph revives
        none of them), on the path the loader passes them;
      - files that are links or not regular files, assets outside `assets/`, lookup tables
        read from a file (kbert's exports read none; the message says whether the name is
        an asset, a path written in the graph or one from the request);
      - constants, constant shapes and variables of more than `max_elements` elements;
        string constants that expand to more than `max_elements` bytes (TensorFlow repeats
        a TensorProto's last value up to its shape: the values' lengths times their
        repetitions are counted); tables filled at load with more than `max_elements`
        elements, or bytes of strings, in all;
      - in the functions that run during `tf.saved_model.load` itself (resources'
        `_create_resource`, `_initialize` and `_destroy_resource`, the save and restore
        functions of saveable objects, and all they call): any op outside
        `saved_model_ops.LOAD_TIME_OPS`, and any allocation whose shape does not fold to
        constants under the cap;
      - loops whose `maximum_iterations` is neither a constant up to `max_loop_constant`
        nor a sum of at most `MAX_BOUND_TERMS` sizes of tensors they are given plus
        constants up to `max_loop_constant` (kbert's BPE loop: `size(ids) + 1`), loops
        inside another loop's condition or body (at any depth of calls), and functions that
        call themselves;
      - lookup tables filled (`LookupTableImportV2`) anywhere but inside
        `tf.saved_model.load`, or from anything but constants of the SavedModel; calls into
        the functions that run inside `tf.saved_model.load` from any other function (the
        main graph's init call only with constants and resources);
      - functions whose nodes, with their calls expanded (a function called from two
        places counts twice), exceed `MAX_EXPANDED_NODES`: calls that repeat at each of
        many levels multiply;
      - a function library holding two functions of one name;
      - TF1 SavedModels (no object graph) and chunked ones (`saved_model.cpb`).

    It reads the directory as it is now: to load what was checked, use `load_saved_model`,
    which checks and loads a private copy.

    Raises:
        UnsafeSavedModelError: naming the op, its node and the function it sits in, or the
            file, and why.
        FileNotFoundError: `path` holds no SavedModel.
    """
    directory = os.path.realpath(os.fspath(path))
    saved = read_saved_model(directory)
    _Checker(saved, directory, max_elements, max_loop_constant).run()


class _Checker:
    def __init__(self, saved, directory, max_elements,
                 max_loop_constant=DEFAULT_MAX_LOOP_CONSTANT):
        if len(saved.meta_graphs) != 1 or not saved.meta_graphs[0].HasField("object_graph_def"):
            raise UnsafeSavedModelError(
                f"{directory}: a TF1 SavedModel ({len(saved.meta_graphs)} MetaGraphs, no "
                f"object graph) runs its own restore and init ops, which are not checked; "
                f"load it with trusted=True if you trust it.")
        self.directory, self.max_elements = directory, max_elements
        self.max_loop_constant = max_loop_constant
        self.max_expanded_nodes = MAX_EXPANDED_NODES
        self.meta = saved.meta_graphs[0]
        self.objects = self.meta.object_graph_def
        library = self.meta.graph_def.library
        twice = sorted(n for n, c in Counter(f.signature.name for f in library.function).items()
                       if c > 1)
        if twice:
            raise UnsafeSavedModelError(
                f"{directory}: the function library holds {len(twice)} name(s) more than "
                f"once ({', '.join(repr(n) for n in twice[:5])}): only one of each would be "
                f"checked, and TensorFlow may run the other.")
        self.functions = {f.signature.name: f for f in library.function}
        self.bodies = [Body(None, self.meta.graph_def.node)] + [
            Body(name, f.node_def, f) for name, f in self.functions.items()]
        self.body_of = {body.name: body for body in self.bodies}
        self.saved_as = self._saved_as()
        self.callers = defaultdict(list)  # function -> [(calling body's name, node)]
        for body in self.bodies:
            for node in body.nodes.values():
                self._collect_calls(body, node)
        self.calls = defaultdict(set)  # function (None: the main graph) -> what it names
        self.sites = defaultdict(Counter)  # function -> {callee: how many nodes name it}
        for callee, sites in self.callers.items():
            for caller, _ in sites:
                self.calls[caller].add(callee)
                self.sites[caller][callee] += 1
        self.in_loop = self._loop_functions()
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

    # === Where things are, for the messages ===
    def _saved_as(self):
        """Function name -> the object that saves it: its path from the root
        ("root.signatures.serving_default"), else how it is reached (a saveable object's
        function) or that nothing reaches it. Every node counts: the loader revives all."""
        nodes = self.objects.nodes
        if not nodes:
            return {}
        paths, queue = {0: "root"}, [0]
        while queue:
            node_id = queue.pop(0)
            for child in nodes[node_id].children:
                if child.node_id not in paths and 0 <= child.node_id < len(nodes):
                    paths[child.node_id] = f"{paths[node_id]}.{child.local_name}"
                    queue.append(child.node_id)
        for node_id in range(len(nodes)):
            for key, kind, target in _saveable_targets(nodes[node_id], len(nodes)):
                if target not in paths:
                    paths[target] = (f"the {kind} of {paths.get(node_id, f'object {node_id}')}"
                                     f"'s saveable {key!r}")
        saved_as = {}
        for node_id in range(len(nodes)):
            path = paths.get(node_id, f"object {node_id}, which no path from the root reaches")
            for name in _node_functions(nodes[node_id]):
                saved_as.setdefault(name, path)
        for name in self.objects.concrete_functions:
            saved_as.setdefault(name, "the object graph's concrete_functions")
        return saved_as

    def where(self, name, seen=()):
        if name is None:
            return "the main graph"
        if name in self.saved_as:
            return f"function {name!r} (saved as {self.saved_as[name]})"
        callers = [c for c, _ in self.callers.get(name, []) if c not in (name, *seen)]
        return f"function {name!r}" + (
            f" (called from {self.where(callers[0], (*seen, name))})" if callers else "")

    def describe(self, body, node, why):
        return f"{node.op} (node {node.name!r} in {self.where(body.name)}) {why}"

    def refuse(self, body, node, why, harm=True):
        """Notes a problem; all are reported together once every node is seen."""
        self.problems.append((0 if harm else 1, self.describe(body, node, why)))

    # === Calls between functions ===
    def _collect_calls(self, body, node):
        names = [node.op] if node.op in self.functions else []
        for attr in node.attr.values():
            names += function_names(attr)
        for name in names:
            if name not in self.functions:
                raise UnsafeSavedModelError(self.directory + ": " + self.describe(
                    body, node, f"names the function {name!r}, which is not in the "
                                f"SavedModel's library (TensorFlow would run an op of that "
                                f"name)."))
            self.callers[name].append((body.name, node))

    def _check_recursion(self):
        calls = self.calls
        done, path = set(), []

        def visit(name):
            if name in path:
                cycle = " -> ".join(path[path.index(name):] + [name])
                raise UnsafeSavedModelError(
                    f"{self.directory}: functions call themselves ({cycle}): a call that "
                    f"never returns.")
            if name in done:
                return
            path.append(name)
            for callee in sorted(calls[name]):
                visit(callee)
            path.pop()
            done.add(name)

        for name in sorted(self.functions):
            visit(name)

    def _check_call_expansion(self):
        """A function runs once per call path to it: two calls of a function that calls
        another twice run it four times, and 40 such levels run it 2**40 times from a library
        of 40 small functions. Each function's size with its calls expanded (its nodes plus,
        for every node that calls or names a function, that function's expanded size) is
        capped by `max_expanded_nodes` (kbert's exports: at most tens of thousands). Calls
        form no cycle (`_check_recursion` ran first)."""
        expanded, stack = {}, [(name, False) for name in sorted(self.body_of, key=str)]
        while stack:  # post-order without recursion: chains of any length
            name, ready = stack.pop()
            if name in expanded:
                continue
            sites = self.sites[name]
            if not ready:
                stack.append((name, True))
                stack.extend((callee, False) for callee in sites if callee not in expanded)
                continue
            expanded[name] = len(self.body_of[name].nodes) + sum(
                count * expanded[callee] for callee, count in sites.items())
        over = [name for name in expanded if expanded[name] > self.max_expanded_nodes]
        if over:  # the first to cross the cap: what it calls stays under it
            name = min(over, key=lambda n: (expanded[n], str(n)))
            sites = self.sites[name]
            callee = max(sites, key=lambda c: sites[c] * expanded[c]) if sites else None
            raise UnsafeSavedModelError(
                f"{self.directory}: {self.where(name)} runs {expanded[name]:,} nodes with its "
                f"calls expanded (functions called more than once by functions called more "
                f"than once multiply" + (f"; {sites[callee]} call(s) of {callee!r}, "
                f"{expanded[callee]:,} nodes each" if callee else "") + f"), over "
                f"max_expanded_nodes={self.max_expanded_nodes:,}.")

    def _loop_functions(self):
        """Function name -> (body, node) of a `While` whose condition or body runs it (named
        by the loop, or called from what the loop names, at any depth)."""
        found, queue = {}, []
        for body in self.bodies:
            for node in body.nodes.values():
                if node.op in ("While", "StatelessWhile"):
                    for key in ("cond", "body"):
                        name = node.attr[key].func.name
                        if name in self.functions and name not in found:
                            found[name] = (body, node)
                            queue.append(name)
        while queue:
            name = queue.pop()
            for callee in sorted(self.calls[name]):
                if callee not in found:
                    found[callee] = found[name]
                    queue.append(callee)
        return found

    def _checkpoint_functions(self):
        """The functions that only the saver_def's save and restore nodes call, with the
        loader's file name: TensorFlow's own `_traced_save` / `_traced_restore`."""
        saver = self.meta.saver_def
        main = self.bodies[0]
        filename = main.nodes.get(saver.filename_tensor_name.split(":")[0])
        if filename is None or filename.op != "Placeholder":
            return set()
        found, sites = set(), {saver.save_tensor_name.split(":")[0], saver.restore_op_name}
        revived = self._revived()
        for site in sites:
            node = main.nodes.get(site)
            if node is None or "f" not in node.attr or not node.input or \
                    main.source(node.input[0]) is not filename:
                continue
            name = node.attr["f"].func.name
            if name in self.functions and name not in revived and all(
                    caller is None and call.name in sites for caller, call in self.callers[name]):
                found.add(name)
        return found

    def _revived(self):
        """The functions the loader makes callable: every object node's (reachable from the
        root or not: the loader revives them all, and calls saveable objects' restore
        functions), those of the object graph's `concrete_functions`, and gradients."""
        revived = set(self.saved_as)
        for gradient in self.meta.graph_def.library.gradient:
            revived |= {gradient.function_name, gradient.gradient_func}
        return revived

    def _load_time_functions(self):
        """Function name -> why it runs during `tf.saved_model.load` itself: a resource's
        `_create_resource` / `_initialize` / `_destroy_resource`, a saveable object's save or
        restore function (of any node), and every function these call."""
        nodes, found = self.objects.nodes, {}
        for node in nodes:
            for child in node.children:
                if child.local_name in _RESOURCE_FUNCTIONS and 0 <= child.node_id < len(nodes):
                    for name in _node_functions(nodes[child.node_id]):
                        found.setdefault(name, f"a resource's {child.local_name}")
            for _, kind, target in _saveable_targets(node, len(nodes)):
                for name in _node_functions(nodes[target]):
                    found.setdefault(name, f"a saveable object's {kind}")
        calls, queue = self.calls, list(found)
        while queue:
            name = queue.pop()
            for callee in sorted(calls[name]):
                if callee not in found:
                    found[callee] = found[name]
                    queue.append(callee)
        return found

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
        constant (`saved_model_graph.size_bound`); its condition and body are functions of
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


def _saveable_targets(node, count):
    """(saveable name, "save_function" or "restore_function", the function's node id) of
    `node`'s saveable objects, for ids among the graph's `count` nodes."""
    for key, saveable in node.saveable_objects.items():
        for kind in ("save_function", "restore_function"):
            target = getattr(saveable, kind)
            if 0 <= target < count:
                yield key, kind, target


def _node_functions(node):
    """The functions an object node of the object graph names."""
    names = list(node.function.concrete_functions)
    if node.HasField("bare_concrete_function"):
        names.append(node.bare_concrete_function.concrete_function_name)
    return names
