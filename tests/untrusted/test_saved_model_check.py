"""kbert.untrusted.check_saved_model / load_saved_model: hostile SavedModels made here are refused
before anything in them runs (tf.saved_model.load is never reached: that is the proof; most of
their ops would only run when called, so the absence of a sentinel file is a backstop, not
evidence), naming the op and the function; kbert's own exports and a plain Keras export pass."""

import gc
import logging
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

import kbert
from kbert.untrusted import UnsafeSavedModelError, check_saved_model, load_saved_model
from kbert.untrusted import checker as saved_model_checker
from kbert.untrusted import ops as saved_model_ops
from kbert.untrusted import saved_model as saved_model_check
from tests.export import kbert_exports

STRINGS = tf.TensorSpec([None], tf.string)


def save(module, path):
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.__call__})
    return str(path)


def read_proto(path):
    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString(Path(path, "saved_model.pb").read_bytes())
    return saved


def write_proto(path, saved):
    Path(path, "saved_model.pb").write_bytes(saved.SerializeToString())


def functions_with(path, op):
    """The library functions holding a node of type `op` (read from the proto here, so that
    the test does not take the checker's word for where the op is)."""
    library = read_proto(path).meta_graphs[0].graph_def.library
    return {f.signature.name for f in library.function if any(n.op == op for n in f.node_def)}


def load_time_op_types(path):
    """The op types of the functions that run inside tf.saved_model.load (as the checker
    finds them: resources' functions, saveable objects' functions, what they call)."""
    checker = saved_model_checker.Checker(read_proto(path), str(path), 2**31)
    names = checker._load_time_functions()
    return {n.op for f in checker.functions.values() if f.signature.name in names
            for n in f.node_def}


class _Signature(tf.Module):
    """A module whose serving signature takes raw strings, as kbert's exports do."""

    def __init__(self, call, **tracked):
        super().__init__()
        self._call = call
        for name, value in tracked.items():
            setattr(self, name, value)

    @tf.function(input_signature=[STRINGS])
    def __call__(self, text):
        return {"out": self._call(self, text)}


class _WriteAtLoad(tf.saved_model.experimental.TrackableResource):
    """A resource whose initializer (run by tf.saved_model.load itself) writes a file."""

    def __init__(self, sentinel):
        super().__init__()
        self.sentinel = sentinel

    def _create_resource(self):
        return tf.raw_ops.HashTableV2(key_dtype=tf.string, value_dtype=tf.int64)

    def _initialize(self):
        tf.io.write_file(self.sentinel, "written during tf.saved_model.load")
        return tf.raw_ops.InitializeTableV2(table_handle=self.resource_handle,
                                            keys=tf.constant(["a"]),
                                            values=tf.constant([1], tf.int64))


class _TableFromPath(_WriteAtLoad):
    """A table initialised (at load) from a path written in the graph, not an asset."""

    def _initialize(self):
        return tf.raw_ops.InitializeTableFromTextFileV2(
            table_handle=self.resource_handle, filename=tf.constant(self.sentinel),
            key_index=-2, value_index=-1)


def _summary(module, text):
    writer = tf.raw_ops.SummaryWriter(shared_name="w")
    tf.raw_ops.CreateSummaryFileWriter(writer=writer, logdir=module.sentinel, max_queue=1,
                                       flush_millis=0, filename_suffix=".v2")
    tf.raw_ops.WriteScalarSummary(writer=writer, step=tf.constant(0, tf.int64), tag="x",
                                  value=1.0)
    tf.raw_ops.FlushSummaryWriter(writer=writer)
    return text


def _write(module, text):
    tf.io.write_file(module.sentinel, text[0])
    return text


def _save_v2(module, text):
    tf.raw_ops.SaveV2(prefix=module.sentinel, tensor_names=["x"], shape_and_slices=[""],
                      tensors=[text])
    return text


def _loop_forever(module, text):
    return tf.while_loop(lambda i: tf.constant(True), lambda i: i + 1, [tf.constant(0)])[0]


def _write_in_a_bounded_loop(module, text):
    """A loop bounded by the request's size (as kbert's BPE loop is) whose body writes."""
    def step(i):
        tf.io.write_file(module.sentinel, text[0])
        return i + 1
    return tf.while_loop(lambda i: i < 5, step, [0], maximum_iterations=tf.size(text) + 1)[0]


def _read_in_branch(module, text):
    return tf.cond(tf.size(text) > 0, lambda: tf.io.read_file(text[0]), lambda: "")


# name -> (what the signature does with the module (sentinel: a path in tmp_path), the op
# that must be named, a word the message must hold)
HOSTILE_CALLS = {
    "read_file": (lambda m, text: tf.io.read_file("/etc/hostname"), "ReadFile", "reads"),
    "read_file_from_request": (lambda m, text: tf.io.read_file(text[0]), "ReadFile", "reads"),
    "read_file_in_a_branch": (_read_in_branch, "ReadFile", "called from"),
    "write_file": (_write, "WriteFile", "writes"),
    "list_files": (lambda m, text: tf.io.matching_files("/etc/*"), "MatchingFiles", "files"),
    "save_v2": (_save_v2, "SaveV2", "checkpoint"),
    "summary_writer": (_summary, "CreateSummaryFileWriter", "summar"),
    "python": (lambda m, text: tf.py_function(lambda x: x, [text], tf.string), "EagerPyFunc",
               "Python"),
    "huge_fill": (lambda m, text: tf.zeros([200000, 200000]), "Fill", "[200000, 200000]"),
    "huge_constant": (lambda m, text: tf.constant(0.0, shape=[200000, 200000]), "Const",
                      "[200000, 200000]"),
    "huge_range": (lambda m, text: tf.range(tf.constant(2**40, tf.int64)), "Range",
                   "1,099,511,627,776 elements"),
    # Shapes computed in the graph from constants are folded as TensorFlow computes them.
    "huge_fill_cast_from_floats": (
        lambda m, text: tf.fill(tf.cast(tf.constant([2e5, 2e5]), tf.int32), 0.0), "Fill",
        "[200000, 200000]"),
    "huge_fill_from_a_product": (  # 200000 * 200000 wraps around in int32, as in TensorFlow
        lambda m, text: tf.zeros(tf.stack([tf.constant(200000) * 200000, 200000])), "Fill",
        "[1345294336, 200000]"),
    "unbounded_loop": (_loop_forever, "StatelessWhile", "no iteration bound"),
    "write_file_in_a_bounded_loop": (_write_in_a_bounded_loop, "WriteFile", "called from"),
    "not_allowlisted": (lambda m, text: tf.linalg.det(tf.constant([[1.0, 2.0], [3.0, 4.0]])),
                        "MatrixDeterminant", "not among the ops"),
}


class _AllocateAtLoad(tf.saved_model.experimental.TrackableResource):
    """A variable handle whose initializer (run by tf.saved_model.load itself) sums a tensor
    that `make()` allocates: only ops of the allowlist, the sizes hidden from the old check."""

    def __init__(self, make):
        super().__init__()
        self._make = make

    def _create_resource(self):
        return tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[],
                                      shared_name=f"allocate_at_load_{id(self)}")

    def _initialize(self):
        return tf.raw_ops.AssignVariableOp(resource=self.resource_handle,
                                           value=tf.reduce_sum(self._make()))


def _computed_at_load():
    """200000 * 200000, from an op the checker does not fold."""
    n = tf.cast(tf.argmax(tf.constant([0, 1])), tf.int32) * 200000
    return tf.zeros(tf.stack([n, n]))


def _outer_product():
    ones = tf.ones([200000])
    return tf.einsum("i,j->ij", ones, ones)


# name -> (what `_initialize` allocates, the op that must be named, a word the message holds)
HOSTILE_AT_LOAD = {
    "fill_cast_from_floats_at_load": (
        lambda: tf.fill(tf.cast(tf.constant([2e5, 2e5]), tf.int32), 0.0), "Fill",
        "[200000, 200000]"),
    "fill_of_a_product_at_load": (
        lambda: tf.zeros(tf.stack([tf.constant(200000) * 200000, 200000])), "Fill",
        "[1345294336, 200000]"),
    "shape_computed_at_load": (_computed_at_load, "Fill", "[None, None]) is no constant"),
    "outer_product_at_load": (_outer_product, "Einsum", "inside tf.saved_model.load"),
}


def _hostile(name, tmp_path):
    sentinel = str(tmp_path / "sentinel")
    if name in HOSTILE_AT_LOAD:
        make, op, word = HOSTILE_AT_LOAD[name]
        module = _Signature(lambda m, text: text, table=_AllocateAtLoad(make))
        return save(module, tmp_path / name), sentinel, op, word
    if name == "write_at_load":
        module = _Signature(lambda m, text: text, table=_WriteAtLoad(sentinel))
        return save(module, tmp_path / name), sentinel, "WriteFile", "_initialize"
    if name == "table_from_absolute_path":
        module = _Signature(lambda m, text: text, table=_TableFromPath(sentinel))
        return (save(module, tmp_path / name), sentinel, "InitializeTableFromTextFileV2",
                f"the path {sentinel!r} written in the graph")
    call, op, word = HOSTILE_CALLS[name]
    module = _Signature(call, sentinel=sentinel)
    return save(module, tmp_path / name), sentinel, op, word


HOSTILE = [*HOSTILE_CALLS, *HOSTILE_AT_LOAD, "write_at_load", "table_from_absolute_path"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_saved_models_are_refused_before_they_run(name, tmp_path, monkeypatch):
    path, sentinel, op, word = _hostile(name, tmp_path)
    with pytest.raises(UnsafeSavedModelError) as refused:
        check_saved_model(path)
    message = str(refused.value)
    assert f"{op} (node " in message and word in message, message
    holders = functions_with(path, op)
    assert any(f"function '{f}'" in message for f in holders) or (
        not holders and "the main graph" in message), (holders, message)

    def reached(*args, **kwargs):
        raise AssertionError("tf.saved_model.load was reached")

    monkeypatch.setattr(tf.saved_model, "load", reached)
    with pytest.raises(UnsafeSavedModelError, match=op):
        load_saved_model(path)
    with pytest.raises(UnsafeSavedModelError, match=op):  # as a pipeline's model= too
        kbert.pipeline("text-classification", model=path)
    # A backstop only (see the module's docstring): most of these ops would run when called.
    assert not list(tmp_path.glob("sentinel*"))  # SaveV2 would add .index, a writer a folder


def test_a_hostile_model_does_run_when_trusted(tmp_path, caplog):
    """The control: the write-at-load model really writes (so its refusal above means
    something), and trusted=True says loudly that nothing was checked."""
    path, sentinel, _, _ = _hostile("write_at_load", tmp_path)
    with caplog.at_level(logging.WARNING):
        load_saved_model(path, trusted=True)
    assert Path(sentinel).read_text() == "written during tf.saved_model.load"
    assert "NOT CHECKING" in caplog.text and path in caplog.text


def _with_asset(tmp_path):
    """A SavedModel with an asset file that its signature names but does not read."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\nc\n")
    module = _Signature(lambda m, text: tf.fill(tf.shape(text), m.vocab.asset_path),
                        vocab=tf.saved_model.Asset(str(vocab)))
    return save(module, tmp_path / "asset")


def test_an_asset_passes_and_a_symlinked_asset_does_not(tmp_path):
    path = _with_asset(tmp_path)
    check_saved_model(path)
    loaded = load_saved_model(path)
    out = loaded.signatures["serving_default"](text=tf.constant(["x"]))
    asset = Path(out["out"].numpy()[0].decode())  # in load_saved_model's private copy
    assert asset.parts[-2:] == ("assets", "vocab.txt") and asset.read_text() == "a\nb\nc\n"
    assert not str(asset).startswith(str(tmp_path))
    del loaded, out
    gc.collect()
    assert not asset.parent.parent.exists()  # removed with the loaded object
    secret = tmp_path / "secret"
    secret.write_text("secret\n")
    asset = Path(path, "assets", "vocab.txt")
    asset.unlink()
    asset.symlink_to(secret)
    with pytest.raises(UnsafeSavedModelError, match=r"assets/vocab.txt is a link \(to "):
        load_saved_model(path)


def test_a_table_read_from_an_asset_is_refused_too(tmp_path):
    """kbert's exports hold their vocabularies in the graph: even an asset table is a file
    read kbert never needs (and the message says where the file name comes from)."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\n")
    table = tf.lookup.StaticHashTable(
        tf.lookup.TextFileInitializer(str(vocab), tf.string, -2, tf.int64, -1), -1)
    path = save(_Signature(lambda m, text: m.table.lookup(text), table=table),
                tmp_path / "table")
    with pytest.raises(UnsafeSavedModelError, match="InitializeTableFromTextFileV2 .*_initialize"
                                                    ".* named by a captured asset"):
        check_saved_model(path)


def test_assets_outside_the_directory(tmp_path):
    path = _with_asset(tmp_path)
    saved = read_proto(path)
    for name in ("../../secret", str(tmp_path / "secret")):
        (tmp_path / "secret").write_text("secret\n")
        saved.meta_graphs[0].asset_file_def[0].filename = name
        write_proto(path, saved)
        with pytest.raises(UnsafeSavedModelError,
                           match=f"the asset '{re.escape(name)}' .* is outside"):
            check_saved_model(path)


def test_a_fifo_and_tf1_and_chunked_saved_models(tmp_path):
    path = _with_asset(tmp_path)
    os.mkfifo(Path(path, "assets", "pipe"))
    with pytest.raises(UnsafeSavedModelError, match="pipe is not a regular file"):
        check_saved_model(path)
    os.remove(Path(path, "assets", "pipe"))
    saved = read_proto(path)
    saved.meta_graphs[0].ClearField("object_graph_def")
    write_proto(path, saved)
    with pytest.raises(UnsafeSavedModelError, match="a TF1 SavedModel"):
        check_saved_model(path)
    Path(path, "saved_model.cpb").write_bytes(b"")
    with pytest.raises(UnsafeSavedModelError, match="chunked"):
        check_saved_model(path)
    with pytest.raises(FileNotFoundError):
        check_saved_model(tmp_path / "nothing")


def test_pbtxt_is_read_too(tmp_path):
    from google.protobuf import text_format

    path, _, _, _ = _hostile("read_file", tmp_path)
    text = text_format.MessageToString(read_proto(path))
    os.remove(Path(path, "saved_model.pb"))
    Path(path, "saved_model.pbtxt").write_text(text)
    with pytest.raises(UnsafeSavedModelError, match="ReadFile"):
        check_saved_model(path)


def _edit_first_signature(path, edit):
    """Applies `edit(function, library)` to the serving signature's inner function."""
    saved = read_proto(path)
    library = saved.meta_graphs[0].graph_def.library
    inner = next(f for f in library.function if f.signature.name.startswith("__inference___call__"))
    edit(inner, library)
    write_proto(path, saved)
    return inner.signature.name


def test_calls_the_library_does_not_hold_and_calls_that_never_return(tmp_path):
    path = save(_Signature(lambda m, text: tf.strings.length(text)), tmp_path / "ok")
    check_saved_model(path)

    def call(target):
        def edit(function, library):
            node = function.node_def.add(name="evil", op="StatefulPartitionedCall")
            node.attr["f"].func.name = target or function.signature.name
        return edit

    shutil.copytree(path, tmp_path / "primitive")
    name = _edit_first_signature(str(tmp_path / "primitive"), call("WriteFile"))
    with pytest.raises(UnsafeSavedModelError, match=f"node 'evil' in function '{name}'.*names "
                                                    f"the function 'WriteFile'"):
        check_saved_model(tmp_path / "primitive")
    name = _edit_first_signature(path, call(None))
    with pytest.raises(UnsafeSavedModelError, match=f"call themselves \\({name} -> {name}\\)"):
        check_saved_model(path)


def _doubling(path, levels):
    """A SavedModel whose signature calls a function that calls the one below it twice,
    `levels` levels deep (the bottom one runs 2**levels times per request). Saved with 2
    levels, then deepened in the proto (TensorFlow's own save takes time exponential in the
    depth): level k is a copy of level 1 calling level k - 1, and the top calls the last."""
    @tf.function
    def bottom(x):
        return x + 1

    @tf.function
    def one(x):
        return bottom(x) + bottom(x + 1)

    @tf.function
    def two(x):
        return one(x) + one(x + 1)

    path = save(_Signature(lambda m, text: two(tf.strings.length(text))), path)
    saved = read_proto(path)
    library = saved.meta_graphs[0].graph_def.library
    called = {f.signature.name: [n.attr["f"].func.name for n in f.node_def if "f" in n.attr]
              for f in library.function}
    first = next(f for f in library.function if f.signature.name.startswith("__inference_one"))
    below = called[first.signature.name][0]
    for level in range(2, levels):
        copy = library.function.add()
        copy.CopyFrom(first)
        copy.signature.name = f"{first.signature.name}_level{level}"
        for node in copy.node_def:
            if node.attr["f"].func.name == below:
                node.attr["f"].func.name = library.function[-2].signature.name \
                    if level > 2 else first.signature.name
    top = next(f for f in library.function if f.signature.name.startswith("__inference_two"))
    for node in top.node_def:
        if node.attr["f"].func.name == first.signature.name:
            node.attr["f"].func.name = library.function[-1].signature.name
    write_proto(path, saved)
    return path


def test_calls_that_multiply_are_capped(tmp_path):
    """A function called twice by a function called twice ... 30 levels deep runs 2**30
    times: refused, naming the first function over the cap and its repeated call; a few
    levels pass."""
    check_saved_model(_doubling(tmp_path / "three", 3))
    path = _doubling(tmp_path / "thirty", 30)
    with pytest.raises(UnsafeSavedModelError, match=r"runs [\d,]+ nodes with its calls "
                                                    r"expanded .*; 2 call\(s\) of '\w+', "
                                                    r"[\d,]+ nodes each\), over "
                                                    r"max_expanded_nodes=1,000,000\.") as e:
        check_saved_model(path)
    # Named: the first function over the cap (it calls one under the cap twice).
    runs, each = (int(n.replace(",", "")) for n in re.findall(r"([\d,]+) nodes", str(e.value)))
    assert runs > 10**6 >= each and runs >= 2 * each


def test_checkpoint_ops_only_in_the_loaders_own_restore(tmp_path):
    """SaveV2 and RestoreV2 pass in TensorFlow's _traced_save / _traced_restore, on the
    file name the loader passes; not elsewhere, not with another file name."""
    path = save(_Signature(lambda m, text: m.v.read_value() + tf.strings.length(text),
                           v=tf.Variable(1)), tmp_path / "v")
    check_saved_model(path)  # the saver's functions hold SaveV2, RestoreV2, MergeV2Checkpoints
    saved = read_proto(path)
    library = saved.meta_graphs[0].graph_def.library
    restore = next(f for f in library.function if any(n.op == "RestoreV2" for n in f.node_def))
    node = next(n for n in restore.node_def if n.op == "RestoreV2")
    elsewhere = restore.node_def.add(name="elsewhere", op="Const")
    elsewhere.attr["value"].tensor.CopyFrom(tf.make_tensor_proto("/tmp/elsewhere"))
    node.input[0] = "elsewhere:output:0"
    shutil.copytree(path, tmp_path / "called")
    write_proto(path, saved)
    with pytest.raises(UnsafeSavedModelError, match=f"RestoreV2 .* in function "
                                                    f"'{restore.signature.name}'.*not the "
                                                    f"loader's variables/ path"):
        check_saved_model(path)

    def call_restore(function, library):  # a signature calling the restore function
        node = function.node_def.add(name="restore", op="StatefulPartitionedCall")
        node.attr["f"].func.name = restore.signature.name
    _edit_first_signature(str(tmp_path / "called"), call_restore)
    with pytest.raises(UnsafeSavedModelError, match="RestoreV2 .* reads checkpoint files "
                                                    "outside the loader's own restore"):
        check_saved_model(tmp_path / "called")


def test_checkpoint_ops_in_a_function_the_object_graph_revives(tmp_path):
    """TensorFlow's save function passes only where nothing but the saver_def's nodes reach
    it: the loader revives every object node, reachable from the root or not, and calls
    saveable objects' restore functions (here one would write a checkpoint to a path read
    from the checkpoint)."""
    path = save(_Signature(lambda m, text: m.v.read_value() + tf.strings.length(text),
                           v=tf.Variable(1)), tmp_path / "v")
    check_saved_model(path)
    saved = read_proto(path)
    meta = saved.meta_graphs[0]
    site = meta.saver_def.save_tensor_name.split(":")[0]
    traced_save = next(n for n in meta.graph_def.node if n.name == site).attr["f"].func.name
    assert traced_save in functions_with(path, "SaveV2")
    objects = meta.object_graph_def
    # An object no path from the root reaches, whose saveable's functions are TensorFlow's
    # save function.
    function_node = len(objects.nodes)
    objects.nodes.add().bare_concrete_function.concrete_function_name = traced_save
    holder = objects.nodes.add()
    holder.user_object.identifier = "_generic_user_object"
    holder.saveable_objects["x"].save_function = function_node
    holder.saveable_objects["x"].restore_function = function_node
    write_proto(path, saved)
    with pytest.raises(UnsafeSavedModelError, match="SaveV2 .* writes checkpoint files "
                                                    "outside") as refused:
        check_saved_model(path)
    assert (f"in function '{traced_save}' (saved as the save_function of object "
            f"{function_node + 1}'s saveable 'x')") in str(refused.value)
    # Named only in the object graph's concrete_functions: revived too.
    del objects.nodes[function_node:]
    objects.concrete_functions[traced_save].SetInParent()
    write_proto(path, saved)
    with pytest.raises(UnsafeSavedModelError, match="SaveV2 .* writes checkpoint files"):
        check_saved_model(path)


def test_two_functions_of_one_name_are_refused(tmp_path):
    path = save(_Signature(lambda m, text: tf.strings.length(text)), tmp_path / "twice")
    name = _edit_first_signature(path, lambda function, library: library.function.add(
        ).CopyFrom(function))
    with pytest.raises(UnsafeSavedModelError, match=f"holds 1 name\\(s\\) more than once "
                                                    f"\\('{name}'\\)"):
        check_saved_model(path)


def test_what_is_loaded_is_what_was_checked(tmp_path, monkeypatch):
    """The directory is swapped for a hostile one right after the check: load_saved_model
    loads its private copy of what it checked, and removes the copy with the object."""
    clean = save(_Signature(lambda m, text: tf.strings.length(text)), tmp_path / "clean")
    hostile, sentinel, _, _ = _hostile("write_at_load", tmp_path)
    real_check = saved_model_check.check_saved_model
    copies = []

    def check_then_swap(path, **kwargs):
        real_check(path, **kwargs)
        copies.append(Path(path))
        shutil.rmtree(clean)
        shutil.copytree(hostile, clean)

    monkeypatch.setattr(saved_model_check, "check_saved_model", check_then_swap)
    loaded = load_saved_model(clean)
    assert not Path(sentinel).exists()  # the hostile initializer did not run
    assert loaded.signatures["serving_default"](text=tf.constant(["abc"]))["out"].numpy() == [3]
    assert copies[0].exists() and not str(copies[0]).startswith(str(tmp_path))
    del loaded
    gc.collect()
    assert not copies[0].exists()
    monkeypatch.setattr(saved_model_check, "check_saved_model", real_check)
    with pytest.raises(UnsafeSavedModelError, match=f"{re.escape(clean)}: .*WriteFile"):
        load_saved_model(clean)  # named by the caller's path, not the copy's


def _table():
    """A hash table filled at load from constants, as kbert's byte-level BPE's merge table."""
    return tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
        tf.constant(["a", "b"]), tf.constant([1, 2], tf.int64)), default_value=-1)


def _counting_loop(bound):
    """A signature counting to `bound(text)` in a While loop whose body looks a table up (a
    stateful body makes a `While`, as kbert's BPE loop is; a pure one a `StatelessWhile`)."""
    def call(module, text):
        def step(i):
            return i + tf.cast(module.table.lookup(tf.constant("a")), tf.int32)
        return tf.while_loop(lambda i: i < 10**6, step, [0], maximum_iterations=bound(text))[0]
    return _Signature(call, table=_table())


def test_a_loop_passes_with_a_bound_from_a_size_only(tmp_path):
    """A While passes when tf.while_loop's maximum_iterations is the size of a tensor it is
    given (kbert's BPE: size(ids) + 1) or a constant under the cap; a bound computed any other
    way, or none, is refused, and so is a file op in a bounded loop's body (HOSTILE)."""
    sized = save(_counting_loop(lambda text: tf.size(text) + 1), tmp_path / "sized")
    check_saved_model(sized)
    assert functions_with(sized, "LookupTableFindV2")  # the body is a function of the library
    loaded = load_saved_model(sized)
    assert loaded.signatures["serving_default"](text=tf.constant(["x", "y", "z"]))[
        "out"].numpy() == 4
    dimension = save(_counting_loop(lambda text: tf.shape(text)[0]), tmp_path / "dimension")
    check_saved_model(dimension)
    # A string's bytes (a tensor in memory: linear in the request's size) bound it too.
    nbytes = save(_counting_loop(lambda text: tf.size(tf.strings.bytes_split(text[0]))),
                  tmp_path / "bytes")
    check_saved_model(nbytes)
    constant = save(_counting_loop(lambda text: 100), tmp_path / "constant")
    check_saved_model(constant)
    with pytest.raises(UnsafeSavedModelError, match=r"While .* is a loop of 100 iterations "
                                                    r"\(a constant maximum_iterations\), over "
                                                    r"max_loop_constant=50"):
        check_saved_model(constant, max_loop_constant=50)
    # The request's contents (a string's length), a product of sizes: no bound the check sees.
    for name, bound, made_by in [
            ("length", lambda text: tf.strings.length(text)[0], "StridedSlice"),
            ("product", lambda text: tf.size(text) * tf.size(text), "Mul")]:
        path = save(_counting_loop(bound), tmp_path / name)
        with pytest.raises(UnsafeSavedModelError,
                           match=f"While .* is a loop whose maximum_iterations is computed by "
                                 f"node .* \\({made_by}\\), not the size of tensors"):
            check_saved_model(path)
    # A pure loop (StatelessWhile: the summarizer's) is checked as a While: it passes when
    # bounded by a size and is refused without a bound.
    for name, bound in (("pure", lambda text: tf.size(text)), ("pure_unbounded", None)):
        path = save(_Signature(lambda m, text, bound=bound: tf.while_loop(
            lambda i: i < tf.size(text), lambda i: i + 1, [0],
            maximum_iterations=None if bound is None else bound(text))[0]), tmp_path / name)
        if bound is not None:
            check_saved_model(path)
            continue
        with pytest.raises(UnsafeSavedModelError,
                           match="StatelessWhile .* is a loop with no iteration bound"):
            check_saved_model(path)


def _nested(levels):
    """`levels` While loops, each in the body of the one outside it, each bounded by the
    request's bytes: size**levels steps in all (the reviewer's repro)."""
    def call(module, text):
        size = tf.size(tf.strings.bytes_split(text[0]))

        def loop(level):
            def step(i, total):
                inner = loop(level - 1) if level > 1 else tf.cast(
                    module.table.lookup(tf.constant("a")), tf.int32)
                return i + 1, total + inner
            return tf.while_loop(lambda i, t: i < 10**9, step, [0, 0],
                                 maximum_iterations=size)[1]
        return loop(levels)
    return _Signature(call, table=_table())


def test_nested_loops_are_refused(tmp_path):
    """One bounded loop passes (kbert's BPE); a loop run by another loop's body, however each
    is bounded, multiplies the steps and is refused, naming the outer loop."""
    check_saved_model(save(_nested(1), tmp_path / "one"))
    for levels in (2, 3):
        path = save(_nested(levels), tmp_path / f"nested{levels}")
        with pytest.raises(UnsafeSavedModelError, match=r"While \(node .* is a loop inside "
                                                        r"another loop \(the While node ") \
                as refused:
            check_saved_model(path)
        assert "iterations multiply" in str(refused.value)
        bodies = {f for f in functions_with(path, "While")  # those holding an inner loop
                  if "while_body" in f}
        assert len(bodies) == levels - 1 and any(f"function '{f}'" in str(refused.value)
                                                 for f in bodies), (bodies, str(refused.value))


def test_constant_loop_bounds_are_capped_by_max_loop_constant(tmp_path):
    """A constant maximum_iterations (or the constants added to a size) over
    max_loop_constant (1024) is refused, however big max_elements is: 2**31 steps are hours
    of CPU. Sizes are summed at most MAX_BOUND_TERMS times (a DAG of sums doubles a size at
    each level)."""
    assert saved_model_check.DEFAULT_MAX_LOOP_CONSTANT == 1024
    check_saved_model(save(_counting_loop(lambda text: 1024), tmp_path / "cap"))
    check_saved_model(save(_counting_loop(lambda text: tf.size(text) + 1024), tmp_path / "add"))

    def doubled(text):
        bound = tf.size(text)
        for _ in range(5):
            bound = bound + bound  # 32 times the size
        return bound

    for name, bound, word in [
            ("constant", lambda text: 1025, r"a loop of 1,025 iterations \(a constant "
                                            r"maximum_iterations\), over max_loop_constant=1,024"),
            ("plus_big", lambda text: tf.size(text) + 2**31 - 1, "max_loop_constant=1,024"),
            ("plus_big_twice", lambda text: tf.add(tf.add(tf.size(text), 2**31 - 1),
                                                   2**31 - 1), "max_loop_constant=1,024"),
            ("doubled", doubled, r"at most 4 summed")]:
        path = save(_counting_loop(bound), tmp_path / name)
        with pytest.raises(UnsafeSavedModelError, match=f"While .* {word}"):
            check_saved_model(path, max_elements=2**40)


def test_a_table_filled_at_load_from_constants_passes(tmp_path):
    path = save(_Signature(lambda m, text: m.table.lookup(text), table=_table()),
                tmp_path / "table")
    check_saved_model(path)
    assert load_time_op_types(path) >= {"HashTableV2", "LookupTableImportV2"}
    loaded = load_saved_model(path)
    assert loaded.signatures["serving_default"](text=tf.constant(["b", "a", "c"]))[
        "out"].numpy().tolist() == [2, 1, -1]


def test_tables_filled_from_anything_but_constants_at_load_are_refused(tmp_path):
    """LookupTableImportV2 passes only inside tf.saved_model.load with keys and values that
    are constants of the SavedModel; mutable tables (which grow with the requests) never."""
    # Filled while serving, from the request.
    def fill(m, text):
        with tf.control_dependencies([tf.raw_ops.LookupTableImportV2(
                table_handle=m.table.resource_handle, keys=text,
                values=tf.zeros(tf.shape(text), tf.int64))]):
            return m.table.lookup(text)
    serving = save(_Signature(fill, table=_table()), tmp_path / "serving")
    with pytest.raises(UnsafeSavedModelError, match="LookupTableImportV2 .*'__inference___call__"
                                                    ".* fills a lookup table outside "
                                                    "tf.saved_model.load"):
        check_saved_model(serving)

    def mutable(m, text):
        m.cache.insert(text, tf.strings.length(text, "UTF8_CHAR") * 0 + 1)
        return m.cache.lookup(text)
    grows = save(_Signature(mutable, cache=tf.lookup.experimental.MutableHashTable(
        tf.string, tf.int32, 0)), tmp_path / "grows")
    with pytest.raises(UnsafeSavedModelError):
        check_saved_model(grows)
    checker = saved_model_checker.Checker(read_proto(grows), grows, 2**31)
    with pytest.raises(UnsafeSavedModelError):
        checker.run()
    problems = [problem for _, problem in checker.problems]  # all, not the message's first 6
    assert any(p.startswith("LookupTableInsertV2 (node ") and "is not among" in p
               for p in problems), problems
    # Its checkpoint restore fills it at load from the checkpoint's tensors: no constants.
    assert any(p.startswith("LookupTableImportV2 (node ") and "the function's argument 0, "
               "which the caller passes" in p for p in problems), problems
    # Filled at load, the keys bound to what is no constant: a captured variable, and a
    # captured "constant" that names another op of the main graph (the loader would run it).
    path = save(_Signature(lambda m, text: m.table.lookup(text), table=_table(),
                           v=tf.Variable(1)), tmp_path / "table")
    check_saved_model(path)
    saved = read_proto(path)
    meta = saved.meta_graphs[0]
    objects = meta.object_graph_def
    initializer = next(n for n in functions_with(path, "LookupTableImportV2"))
    bound = objects.concrete_functions[initializer].bound_inputs  # handle, keys, values
    keys = objects.nodes[bound[1]]
    assert keys.WhichOneof("kind") == "constant"
    variable = next(i for i, n in enumerate(objects.nodes) if n.WhichOneof("kind") == "variable")
    shutil.copytree(path, tmp_path / "variable")
    original = bound[1]
    bound[1] = variable
    write_proto(tmp_path / "variable", saved)
    with pytest.raises(UnsafeSavedModelError, match=f"LookupTableImportV2 .*'{initializer}' "
                                                    f".* fills a lookup table \\(its input 1\\) "
                                                    f"from a captured variable"):
        check_saved_model(tmp_path / "variable")
    bound[1] = original
    other = next(n for n in meta.graph_def.node if n.op == "VarHandleOp")
    keys.constant.operation = other.name
    write_proto(path, saved)
    with pytest.raises(UnsafeSavedModelError, match=f"from a captured constant naming "
                                                    f"'{other.name}' of the main graph, which "
                                                    f"is a VarHandleOp"):
        check_saved_model(path)


def test_a_table_initializer_called_again_is_refused(tmp_path):
    """The serving function calls the table's load-time initializer with the request's
    strings as keys (the reviewer's repro): the object graph's bound inputs (constants) are
    not what that call passes, so the call is refused, and the fill too (its keys are the
    caller's). The main graph's init call may pass only constants and resources."""
    path = save(_Signature(lambda m, text: m.table.lookup(text), table=_table()),
                tmp_path / "table")
    check_saved_model(path)
    saved = read_proto(path)
    meta = saved.meta_graphs[0]
    library = meta.graph_def.library
    init_name = next(iter(functions_with(path, "LookupTableImportV2")))
    init = next(f for f in library.function if f.signature.name == init_name)
    serve = next(f for f in library.function
                 if f.signature.name.startswith("__inference___call__"))
    handle = next(a.name for a in serve.signature.input_arg
                  if a.type == tf.resource.as_datatype_enum)
    text = serve.signature.input_arg[0].name
    length = serve.node_def.add(name="evil_len", op="StringLength", input=[text])
    length.attr["unit"].s = b"BYTE"
    cast = serve.node_def.add(name="evil_cast", op="Cast", input=["evil_len:output:0"])
    cast.attr["SrcT"].type = tf.int32.as_datatype_enum
    cast.attr["DstT"].type = tf.int64.as_datatype_enum
    call = serve.node_def.add(name="evil_call", op="StatefulPartitionedCall",
                              input=[handle, text, "evil_cast:y:0"])
    call.attr["f"].func.name = init_name
    call.attr["Tin"].list.type.extend([a.type for a in init.signature.input_arg])
    call.attr["Tout"].list.type.extend([a.type for a in init.signature.output_arg])
    serve.control_ret["evil_call"] = "evil_call"
    serve.signature.control_output.append("evil_call")
    write_proto(tmp_path / "table", saved)
    checker = saved_model_checker.Checker(read_proto(path), path, 2**31)
    with pytest.raises(UnsafeSavedModelError) as refused:
        checker.run()
    assert re.search(f"StatefulPartitionedCall \\(node 'evil_call' in function "
                     f"'{serve.signature.name}'.* calls '{init_name}', which runs inside "
                     f"tf.saved_model.load \\(a resource's _initialize\\), from a function "
                     f"that runs after it", str(refused.value)), str(refused.value)
    problems = [problem for _, problem in checker.problems]
    assert any(p.startswith("LookupTableImportV2 (node ") and "(its input 1) from the "
               "function's argument 1, which the caller passes" in p for p in problems), problems
    # The main graph's init call passing a computed tensor (a variable's read) as the keys.
    del serve.node_def[-3:]
    del serve.control_ret["evil_call"]
    del serve.signature.control_output[-1]
    main = meta.graph_def.node
    init_call = next(n for n in main if n.attr["f"].func.name == init_name)
    main.add(name="evil_read", op="StringLength", input=[init_call.input[1]])
    init_call.input[1] = "evil_read:0"
    write_proto(tmp_path / "table", saved)
    with pytest.raises(UnsafeSavedModelError, match=f"'{init_call.name}' in the main graph\\) "
                                                    f"calls '{init_name}'.* with 'evil_read:0', "
                                                    f"which is no constant nor resource"):
        check_saved_model(path)


def test_string_constants_are_capped_by_the_bytes_they_expand_to(tmp_path):
    """TensorFlow repeats a TensorProto's last value up to its shape: one 1 MB string in a
    [2**31] Const is within the element cap but 2 PB once made (and would fill a table at
    load). Its bytes, values' lengths times their repetitions, count against max_elements."""
    path = save(_Signature(lambda m, text: tf.concat(
        [text, tf.constant("abcd", shape=[100])], 0)), tmp_path / "splat")
    check_saved_model(path)  # 400 bytes
    with pytest.raises(UnsafeSavedModelError, match=r"Const .* is a string constant of shape "
                                                    r"\[100\] that expands to 400 bytes"):
        check_saved_model(path, max_elements=300)
    saved = read_proto(path)
    serve = next(f for f in saved.meta_graphs[0].graph_def.library.function
                 if f.signature.name.startswith("__inference___call__"))
    const = next(n for n in serve.node_def if n.op == "Const"
                 and n.attr["value"].tensor.string_val == [b"abcd"])
    const.attr["value"].tensor.tensor_shape.dim[0].size = 2**31
    del const.attr["value"].tensor.string_val[:]
    const.attr["value"].tensor.string_val.append(b"x" * 2**20)
    write_proto(path, saved)
    with pytest.raises(UnsafeSavedModelError, match=r"shape \[2147483648\] that expands to "
                                                    r"2,251,799,813,685,248 bytes"):
        check_saved_model(path)
    # Two tables of 600 bytes of keys each: 1,200 bytes filled at load, over a cap of 1,000.
    def keyed(letter):
        return tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant([letter * 300, letter * 299 + "z"]), tf.constant([1, 2], tf.int64)), -1)
    tables = save(_Signature(lambda m, text: m.a.lookup(text) + m.b.lookup(text),
                             a=keyed("a"), b=keyed("b")), tmp_path / "tables")
    check_saved_model(tables, max_elements=2000)
    with pytest.raises(UnsafeSavedModelError, match=r"LookupTableImportV2 .* is one of the "
                                                    r"fills that put 8 elements \(1,200 bytes of "
                                                    r"strings\) into lookup tables at load, "
                                                    r"over max_elements=1,000"):
        check_saved_model(tables, max_elements=1000)


def test_max_elements_is_the_cap(tmp_path):
    path = save(_Signature(lambda m, text: tf.zeros([300, 300])), tmp_path / "zeros")
    check_saved_model(path)
    with pytest.raises(UnsafeSavedModelError, match=r"shape \[300, 300\] \(at least 90,000 "
                                                    r"elements\), over max_elements=80,000"):
        check_saved_model(path, max_elements=80_000)


def test_pad_by_constants_passes_and_by_too_much_or_by_the_request_does_not(tmp_path):
    """MobileBERT's embeddings pad by one position at each end: Pad passes with constant
    amounts under the cap; amounts over it, or computed from the request, are refused."""
    small = save(_Signature(lambda m, text: tf.pad(
        tf.strings.length(text)[:, None], [[0, 0], [1, 1]])), tmp_path / "small")
    check_saved_model(small)
    huge = save(_Signature(lambda m, text: tf.pad(
        tf.strings.length(text)[:, None], [[0, 0], [0, 90_000]])), tmp_path / "huge")
    with pytest.raises(UnsafeSavedModelError, match=r"Pad.*pads to at least 90,001 elements "
                                                    r".*over max_elements=80,000"):
        check_saved_model(huge, max_elements=80_000)
    # Small amounts on many axes multiply: 41 ** 6 elements from a [1, 1, 1, 1, 1, 1] tensor.
    axes = save(_Signature(lambda m, text: tf.pad(
        tf.reshape(tf.strings.length(text)[:1], [1] * 6), [[0, 40]] * 6)), tmp_path / "axes")
    with pytest.raises(UnsafeSavedModelError, match=r"pads to at least 4,750,104,241 elements"):
        check_saved_model(axes, max_elements=80_000)
    asked = save(_Signature(lambda m, text: tf.pad(
        tf.strings.length(text)[:, None],
        tf.stack([[0, 0], [0, tf.strings.length(text)[0]]]))), tmp_path / "asked")
    with pytest.raises(UnsafeSavedModelError, match="pads by amounts that are no constant"):
        check_saved_model(asked)


def test_a_keras_export_passes(tmp_path):
    path = kbert_exports.keras_export(str(tmp_path))
    check_saved_model(path)
    assert load_saved_model(path).serve(tf.ones([1, 4])).shape == (1, 2)


@pytest.mark.slow
def test_every_kbert_export_passes_and_the_allowlist_is_no_wider(tmp_path, pipeline_export):
    """Each family (fill-mask included) and each task passes and loads; and every allowlisted
    op is in one of kbert's exports, so the list is exactly as wide as kbert needs. (The other
    variants in kbert_exports.EXPORTS hold no other op: `python -m tests.export.kbert_exports`.)"""
    used, at_load = set(), set()
    for name in kbert_exports.EACH:
        path = kbert_exports.export(name, str(tmp_path), pipeline_export)
        check_saved_model(path)
        used |= kbert_exports.op_types(path)
        at_load |= load_time_op_types(path)
    unused = saved_model_ops.ALLOWED_OPS - used
    assert not unused, f"allowlisted but in no kbert export: {sorted(unused)}"
    # SentencePiece's resource (ALBERT) is all kbert's exports run inside tf.saved_model.load.
    assert at_load == saved_model_ops.LOAD_TIME_OPS, sorted(at_load)
    loaded = load_saved_model(tmp_path / "bert_pretrainer")
    filled = loaded.signatures["serving_default"](text=tf.constant(["the [MASK] is big"]))
    assert filled["num_masks"].numpy().tolist() == [1]
    # RoBERTa's byte-level BPE runs in the checked copy: its merge table was filled at load
    # (merged tokens, not one per byte) and its loop ran to the end: the export answers as
    # the pipeline on the checkpoint.
    import kbert
    from kbert.convert import load_tokenizer

    checkpoint = kbert_exports.ROOT / "tests" / "fixtures" / "hf_tiny" / "roberta"
    tokenizer = load_tokenizer(checkpoint)
    text = "hello world"
    ids = tokenizer.tokenize(tf.constant([text])).to_list()[0]
    assert 0 < len(ids) < len(text.encode())  # merged: "he", "ll", "o", "Ġw", ...
    loaded = load_saved_model(tmp_path / "roberta_pretrainer")
    out = loaded.signatures["serving_default"](text=tf.constant([text + " <mask>"]))
    expected = kbert.pipeline("fill-mask", model=str(checkpoint))(text + " <mask>", top_k=2)
    served = {int(token): (sequence.decode(), float(score)) for token, sequence, score in zip(
        out["token"].numpy()[0, 0], out["sequence"].numpy()[0, 0], out["score"].numpy()[0, 0])}
    assert sorted(served) == sorted(answer["token"] for answer in expected)  # (no near tie)
    for answer in expected:
        sequence, score = served[answer["token"]]
        assert sequence == answer["sequence"] and abs(score - answer["score"]) < 1e-5
