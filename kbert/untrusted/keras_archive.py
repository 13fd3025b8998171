"""Loading `.keras` files safely: the archive is checked before Keras reads it.

It sits in `kbert.untrusted`, below `kbert.convert`, so that the kbert directory format and
every loader above use it; `kbert.untrusted.load_model` is the public name.

Keras's `safe_mode=True` (always on here) refuses to rebuild lambdas from bytecode. This
loader also refuses, before Keras reads anything, an archive whose config names code outside
Keras and kbert (a `Lambda` layer, a function from an arbitrary module) or whose members
point outside the archive (absolute paths, `..`, links).
"""

import json
import stat
import zipfile
from pathlib import PurePosixPath

import keras

TRUSTED_MODULES = ("keras", "kbert")


class UnsafeModelError(ValueError):
    """A `.keras` archive that kbert refuses to load; the message names what and where."""


def _trusted(module, extra):
    top = module.split(".")[0]
    return top in TRUSTED_MODULES or module in extra


def _check_member(path, info):
    name = info.filename
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or ".." in parts or (len(name) > 1 and name[1] == ":"):
        raise UnsafeModelError(f"{path}: the member {name!r} points outside the archive.")
    if stat.S_ISLNK(info.external_attr >> 16):
        raise UnsafeModelError(f"{path}: the member {name!r} is a link.")


def _check_config(path, node, extra, where="config.json"):
    if isinstance(node, list):
        for i, item in enumerate(node):
            _check_config(path, item, extra, f"{where}[{i}]")
        return
    if not isinstance(node, dict):
        return
    class_name, module = node.get("class_name"), node.get("module")
    if class_name == "Lambda" or class_name == "__lambda__":
        raise UnsafeModelError(
            f"{path}: {where} holds a Lambda layer, which would run arbitrary Python code. "
            "kbert loads only layers defined in Keras and kbert (or passed in custom_objects)."
        )
    if isinstance(module, str) and class_name is not None and not _trusted(module, extra):
        named = node.get("config") if class_name == "function" else class_name
        raise UnsafeModelError(
            f"{path}: {where} names {module}.{named}, outside Keras and kbert. Pass the class "
            "in custom_objects if you trust it."
        )
    for key, value in node.items():
        _check_config(path, value, extra, f"{where}.{key}")


def check_keras_archive(path, custom_objects=None):
    """Raises `UnsafeModelError` when the `.keras` file at `path` is not safe to load."""
    extra = {getattr(obj, "__module__", "") for obj in (custom_objects or {}).values()}
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise UnsafeModelError(f"{path} is not a .keras archive (not a zip file).") from None
    except OSError as error:
        raise UnsafeModelError(f"{path}: cannot read it ({error.strerror or error}).") from None
    with archive:
        for info in archive.infolist():
            _check_member(path, info)
        config = _read_config(path, archive)
    _check_config(path, config, extra)


def _read_config(path, archive):
    try:
        return json.loads(archive.read("config.json").decode("utf-8"))
    except KeyError:
        raise UnsafeModelError(f"{path} has no config.json: not a .keras archive.") from None
    except (zipfile.BadZipFile, EOFError, OSError) as error:  # a bad CRC, a truncated file
        raise UnsafeModelError(f"{path}: cannot read its config.json ({error}); the archive is "
                               "truncated or corrupted.") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise UnsafeModelError(f"{path}: its config.json is not JSON ({error}).") from None


def archive_config(path):
    """The model config (config.json) inside the `.keras` file at `path`, read without
    loading the model; `UnsafeModelError` naming the file when it cannot be read."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise UnsafeModelError(f"{path} is not a .keras archive ({error}).") from None
    with archive:
        return _read_config(path, archive)


def load_model(path, custom_objects=None, compile=True):
    """`keras.saving.load_model` with `safe_mode=True`, after `check_keras_archive`.

    kbert's layers, models, optimizers and schedule are registered with Keras when
    `kbert.models` is imported (done here), so they need no custom_objects.
    """
    import kbert.models  # noqa: F401 - registers every kbert class a .keras file may name

    check_keras_archive(path, custom_objects)
    return keras.saving.load_model(path, custom_objects=custom_objects, compile=compile,
                                   safe_mode=True)
