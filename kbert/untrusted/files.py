"""The files of a SavedModel, read before anything in it runs: no links, FIFOs or devices
among them, assets inside `assets/`, no variable or checkpoint tensor over the size cap, and
`saved_model.pb` (or `.pbtxt`) parsed as a protocol buffer, as `tf.saved_model.load` reads
it. `kbert.untrusted.saved_model` walks the graphs after these pass."""

import os
import shutil
import stat

from google.protobuf import message, text_format
from tensorflow.core.protobuf import saved_model_pb2

from kbert.untrusted.keras_archive import UnsafeModelError
from kbert.untrusted.graph import elements, known_elements


class UnsafeSavedModelError(UnsafeModelError):
    """A SavedModel that kbert refuses to load; the message names the op, its node and the
    function it sits in (or the file), and why."""


# Opens nothing through a link, and never blocks on a FIFO.
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK


def _check_kind(directory, relative, mode, link_target):
    """Refuses a link (`link_target()` reads where it points) and anything but a regular file
    or a directory: reading a FIFO would hang the load."""
    if stat.S_ISLNK(mode):
        raise UnsafeSavedModelError(
            f"{directory}: {relative} is a link (to {link_target()!r}); a SavedModel's files "
            f"must be its own regular files.")
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise UnsafeSavedModelError(
            f"{directory}: {relative} is not a regular file (a FIFO or a device).")


def read_saved_model(directory):
    """The SavedModel proto of `directory` (a real path), after its files are checked."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"No SavedModel directory at {directory!r}.")
    for parent, folders, files in os.walk(directory):
        for name in folders + files:
            full = os.path.join(parent, name)
            _check_kind(directory, os.path.relpath(full, directory), os.lstat(full).st_mode,
                        lambda: os.readlink(full))
    if os.path.exists(os.path.join(directory, "saved_model.cpb")):
        raise UnsafeSavedModelError(f"{directory}: a chunked SavedModel (saved_model.cpb) "
                                    f"is not checked; load it with trusted=True if you trust it.")
    saved = saved_model_pb2.SavedModel()
    # The file tf.saved_model.load reads: saved_model.pb first, else saved_model.pbtxt.
    for name in ("saved_model.pb", "saved_model.pbtxt"):
        file = os.path.join(directory, name)
        if os.path.isfile(file):
            with open(file, "rb") as f:
                content = f.read()
            try:
                if name.endswith(".pb"):
                    saved.ParseFromString(content)
                else:
                    text_format.Parse(content.decode("utf-8"), saved)
            except (message.DecodeError, text_format.ParseError, UnicodeDecodeError) as e:
                raise UnsafeSavedModelError(f"{file} is not a SavedModel: {e}") from e
            return saved
    raise FileNotFoundError(f"No saved_model.pb or saved_model.pbtxt in {directory!r}.")


def copy_saved_model(directory, copy):
    """Copies the SavedModel `directory` (a real path) to `copy` (which must not exist), for
    `load_saved_model` to check and load what cannot change under it. Links and anything but
    regular files and directories are refused, never followed nor read; every entry is
    opened relative to its parent's descriptor, without following links, and checked again
    once open, so that a file swapped meanwhile is not what gets copied."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"No SavedModel directory at {directory!r}.")
    top = os.open(directory, _OPEN_FLAGS | os.O_DIRECTORY)
    try:
        os.mkdir(copy, 0o700)
        _copy_folder(top, copy, directory, "")
    finally:
        os.close(top)


def _copy_folder(folder, copy, directory, relative):
    with os.scandir(folder) as entries:
        names = sorted(entry.name for entry in entries)
    for name in names:
        inner = os.path.join(relative, name)
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
        _check_kind(directory, inner, mode, lambda: os.readlink(name, dir_fd=folder))
        try:
            opened = os.open(name, _OPEN_FLAGS | (os.O_DIRECTORY if stat.S_ISDIR(mode) else 0),
                             dir_fd=folder)
        except OSError as e:  # swapped for a link or another kind since the stat
            raise UnsafeSavedModelError(f"{directory}: {inner} changed while it was copied "
                                        f"({e}).") from e
        try:
            if stat.S_IFMT(os.fstat(opened).st_mode) != stat.S_IFMT(mode):
                raise UnsafeSavedModelError(f"{directory}: {inner} changed while it was "
                                            f"copied.")
            target = os.path.join(copy, name)
            if stat.S_ISDIR(mode):
                os.mkdir(target, 0o700)
                _copy_folder(opened, target, directory, inner)
            else:
                with open(opened, "rb", closefd=False) as source, \
                        open(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600),
                             "wb") as written:
                    shutil.copyfileobj(source, written, 1 << 20)
        finally:
            os.close(opened)


def check_files(directory, meta, max_elements):
    """Assets, the object graph's variables and saver registrations, the checkpoint index."""
    assets = os.path.join(directory, "assets")
    for asset in meta.asset_file_def:
        name = asset.filename
        full = os.path.realpath(os.path.join(assets, name.replace("\0", "")))
        if os.path.isabs(name) or "\0" in name or not full.startswith(assets + os.sep):
            raise UnsafeSavedModelError(
                f"{directory}: the asset {name!r} ({asset.tensor_info.name}) is outside the "
                f"SavedModel's assets/ directory.")
        if not os.path.isfile(full):
            raise UnsafeSavedModelError(f"{directory}: the asset {name!r} is missing.")
    for node_id, node in enumerate(meta.object_graph_def.nodes):
        kind = node.WhichOneof("kind")
        if kind == "asset" and not (
                0 <= node.asset.asset_file_def_index < len(meta.asset_file_def)):
            raise UnsafeSavedModelError(f"{directory}: object {node_id} names an asset that "
                                        f"the SavedModel does not list.")
        if kind == "variable" and elements(node.variable.shape) > max_elements:
            raise UnsafeSavedModelError(
                f"{directory}: the variable {node.variable.name!r} has "
                f"{elements(node.variable.shape):,} elements, over max_elements="
                f"{max_elements:,}.")
        if node.registered_saver:
            raise UnsafeSavedModelError(
                f"{directory}: object {node_id} is restored by the saver registered as "
                f"{node.registered_saver!r}, Python code kbert's exports never use.")
    _check_checkpoint_shapes(directory, max_elements)


def _check_checkpoint_shapes(directory, max_elements):
    """The tensors' shapes as variables.index declares them: restoring allocates them."""
    prefix = os.path.join(directory, "variables", "variables")
    if not os.path.isfile(prefix + ".index"):
        return
    import tensorflow as tf

    try:
        shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    except (tf.errors.OpError, ValueError) as e:
        raise UnsafeSavedModelError(f"{directory}: variables/variables.index is not a "
                                    f"checkpoint index: {e}") from e
    for name, shape in shapes.items():
        count = known_elements(shape)
        if count > max_elements:
            raise UnsafeSavedModelError(
                f"{directory}: the checkpoint's tensor {name!r} has shape {shape} "
                f"({count:,} elements), over max_elements={max_elements:,}.")
