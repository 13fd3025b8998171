"""SavedModels from elsewhere are checked before anything in them runs.

A SavedModel is a program: `tf.saved_model.load` runs its resource initializers and restore
functions, and its signatures run whatever ops its graph holds: reading and writing files,
Python callbacks, allocations of any size, loops that never end. `check_saved_model` reads
`saved_model.pb` as a protocol buffer, runs nothing, and refuses what kbert's own exports never
contain (`kbert.export.saved_model_ops`). `load_saved_model` copies the directory, checks the
copy and loads it: every kbert path that loads a SavedModel goes through it.

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
    Body, data_inputs, elements, from_first_argument, function_names, known_elements,
    loop_bound, range_elements,
)

DEFAULT_MAX_ELEMENTS = 2**31
logger = logging.getLogger(__name__)
__all__ = ["UnsafeSavedModelError", "check_saved_model", "load_saved_model"]

# The children of a resource that `tf.saved_model.load` calls itself.
_RESOURCE_FUNCTIONS = ("_create_resource", "_initialize", "_destroy_resource")


def load_saved_model(path, *, trusted=False, max_elements=DEFAULT_MAX_ELEMENTS):
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
            check_saved_model(copy, max_elements=max_elements)
        except UnsafeSavedModelError as e:  # named as the caller knows it
            raise UnsafeSavedModelError(str(e).replace(copy, directory)) from None
        loaded = tf.saved_model.load(copy)
    except BaseException:
        shutil.rmtree(private, ignore_errors=True)
        raise
    # Assets are read from the copy: it lives as long as the loaded object.
    weakref.finalize(loaded, shutil.rmtree, private, ignore_errors=True)
    return loaded


def check_saved_model(path, *, max_elements=DEFAULT_MAX_ELEMENTS):
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
      - in the functions that run during `tf.saved_model.load` itself (resources'
        `_create_resource`, `_initialize` and `_destroy_resource`, the save and restore
        functions of saveable objects, and all they call): any op outside
        `saved_model_ops.LOAD_TIME_OPS`, and any allocation whose shape does not fold to
        constants under the cap;
      - loops (kbert's exports have none; one without an iteration bound is named so) and
        functions that call themselves;
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
    _Checker(saved, directory, max_elements).run()


class _Checker:
    def __init__(self, saved, directory, max_elements):
        if len(saved.meta_graphs) != 1 or not saved.meta_graphs[0].HasField("object_graph_def"):
            raise UnsafeSavedModelError(
                f"{directory}: a TF1 SavedModel ({len(saved.meta_graphs)} MetaGraphs, no "
                f"object graph) runs its own restore and init ops, which are not checked; "
                f"load it with trusted=True if you trust it.")
        self.directory, self.max_elements = directory, max_elements
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
        self.saved_as = self._saved_as()
        self.callers = defaultdict(list)  # function -> [(calling body's name, node)]
        for body in self.bodies:
            for node in body.nodes.values():
                self._collect_calls(body, node)
        self.calls = defaultdict(set)  # function (None: the main graph) -> what it names
        for callee, sites in self.callers.items():
            for caller, _ in sites:
                self.calls[caller].add(callee)
        self.problems = []  # (0: known harm, 1: unknown op; the message)

    def run(self):
        check_files(self.directory, self.meta, self.max_elements)
        self._check_recursion()
        checkpoint = self._checkpoint_functions()
        load_time = self._load_time_functions()
        for body in self.bodies:
            for node in body.nodes.values():
                self._check_node(body, node, body.name in checkpoint,
                                 load_time.get(body.name))
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

    # === One node ===
    def _check_node(self, body, node, in_checkpoint, load_time=None):
        if node.op in ("While", "StatelessWhile"):
            self._check_loop(body, node)
        if node.op in allowed.CHECKPOINT_OPS and in_checkpoint:
            self._check_checkpoint_path(body, node)
        elif node.op in allowed.TABLE_FILE_OPS:
            self.refuse(body, node, self._table_file(body, node))
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
        bound = loop_bound(body, node, self.functions)
        if bound is None:
            self.refuse(body, node, f"is a loop with no iteration bound (cond "
                                    f"{node.attr['cond'].func.name!r}, no "
                                    f"maximum_iterations): it may never return.")
        elif isinstance(bound, int) and bound > self.max_elements:
            self.refuse(body, node, f"is a loop of {bound:,} iterations, over "
                                    f"max_elements={self.max_elements:,}.")

    def _check_checkpoint_path(self, body, node):
        """In the loader's own checkpoint functions, files are named only from the path the
        loader passes (argument 0), with constant suffixes that stay beside it."""
        inputs = data_inputs(node)
        for index in allowed.CHECKPOINT_OPS[node.op]:
            if index >= len(inputs) or not from_first_argument(body, inputs[index]):
                self.refuse(body, node, f"names a checkpoint file that is not the loader's "
                                        f"variables/ path (its input {index}).")

    def _table_file(self, body, node):
        """Why a table read from a file is refused, saying where the file name comes from:
        an asset of the SavedModel, a path written in the graph, or the caller (the request)."""
        inputs = data_inputs(node)
        source = body.source(inputs[1]) if len(inputs) > 1 else None
        origin = f"node {source.name!r}" if source is not None and not isinstance(
            source, int) else "nothing"
        if isinstance(source, int):
            origin = f"the function's argument {source} (from the caller: the request)"
            bound = self.objects.concrete_functions[body.name].bound_inputs if \
                body.name in self.objects.concrete_functions else []
            first_bound = len(body.arguments) - len(bound)
            if source >= first_bound and 0 <= bound[source - first_bound] < len(
                    self.objects.nodes):
                kind = self.objects.nodes[bound[source - first_bound]].WhichOneof("kind")
                origin = f"a captured {kind} of the SavedModel"
        elif source is not None and source.op == "Const":
            value = body.array(inputs[1])
            path = value.reshape(-1)[0].decode("utf-8", "replace") if value is not None and \
                value.size == 1 and value.dtype == object else "?"
            origin = f"the path {path!r} written in the graph"
        return (f"reads a lookup table from a file named by {origin}. kbert's exports hold "
                f"their vocabularies in the graph and read no files.")


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
