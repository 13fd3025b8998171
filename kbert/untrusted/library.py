"""A SavedModel's function library read as a call graph, before anything in it runs: which
function calls which (and how often), where each is saved, which run inside
`tf.saved_model.load` itself, which run in a loop, and the checks that need only the call
graph (functions calling themselves, calls that multiply). `kbert.untrusted.checker` checks
every node on top of it."""

from collections import Counter, defaultdict

from kbert.untrusted.files import UnsafeSavedModelError
from kbert.untrusted.graph import Body, function_names

# The most nodes one function may run with its calls expanded (`_check_call_expansion`).
MAX_EXPANDED_NODES = 10**6

# The children of a resource that `tf.saved_model.load` calls itself.
_RESOURCE_FUNCTIONS = ("_create_resource", "_initialize", "_destroy_resource")


class Library:
    """The function library of a SavedModel's one MetaGraph (TF1 SavedModels refused)."""

    def __init__(self, saved, directory):
        if len(saved.meta_graphs) != 1 or not saved.meta_graphs[0].HasField("object_graph_def"):
            raise UnsafeSavedModelError(
                f"{directory}: a TF1 SavedModel ({len(saved.meta_graphs)} MetaGraphs, no "
                f"object graph) runs its own restore and init ops, which are not checked; "
                f"load it with trusted=True if you trust it.")
        self.directory = directory
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
