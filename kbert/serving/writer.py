"""The one writer of kbert's exports: a `keras.export.ExportArchive` (the endpoints a task
folder or an exporter made) written as a SavedModel directory (`saved_model`) or a `.tflite`
file (`tflite`), with the export's metadata (`kbert.serving.metadata`) and, for a SavedModel,
the tokenizer's files beside it; or an ONNX export's directory (`onnx_directory`: the model
converted by `kbert.serving.onnx`, no endpoint of text).

`write_archive` is `ExportArchive.write_out` (the pinned keras 3.15's steps:
`_filter_and_track_resources`, then `tf.saved_model.save` with every endpoint as a signature
and the first as `serving_default` where none has that name) with one trace per endpoint
instead of two: TensorFlow's function cache keys a trace by whether it ran inside a
SavedModel save, so the save traced again what `write_out` had traced outside one; here the
first trace is made inside the save's options and the save finds it in the cache (an export
takes about 40% less time). Private APIs of keras and TensorFlow: `kbert._keras_private`
guards both.
"""

import os
import tempfile

import tensorflow as tf

from kbert import _keras_private
from kbert.serving import metadata, runtimes
from kbert.tokenizers.files import write_tokenizer_files


def _names(structure):
    if isinstance(structure, dict):
        return sorted(structure)
    return [spec.name for spec in tf.nest.flatten(structure) if getattr(spec, "name", None)]


def write_archive(archive, path, default=True):
    """`archive.write_out(path, verbose=False)`, with one trace per endpoint (`default`:
    the first as `serving_default` too where none has that name, as `write_out`). Returns
    the signatures written: {name: {"inputs": [...], "outputs": [...]}}."""
    _keras_private.guard("export_archive_internals")
    _keras_private.guard("tf_save_context")
    from tensorflow.python.saved_model import save_context

    names = list(archive._endpoint_names)
    if not names:
        raise ValueError("No endpoints have been set yet. Call add_endpoint().")
    options = tf.saved_model.SaveOptions()
    with save_context.save_context(options):
        archive._filter_and_track_resources()
    signatures = {name: archive._get_concrete_fn(name) for name in names}
    if default:
        signatures.setdefault("serving_default", signatures[names[0]])
    tf.saved_model.save(archive._tf_trackable, str(path), options=options,
                        signatures=signatures)
    with save_context.save_context(options):  # the traces made above, from the cache
        return {name: _signature(function) for name, function in signatures.items()}


def _signature(function):
    """{"inputs": [names], "outputs": [names]} of an endpoint (a tf.function with its input
    signature, traced already: its concrete function is the cached trace)."""
    if hasattr(function, "get_concrete_function"):
        function = function.get_concrete_function()
    args, kwargs = function.structured_input_signature
    return {"inputs": _names(kwargs) or _names(args),
            "outputs": _names(function.structured_outputs)}


def saved_model(archive, path, meta, tokenizer=None):
    """Writes `archive` as a SavedModel at `path` with `meta` (`metadata.describe`, its
    signatures added) as export.json, and `tokenizer`'s files beside it (None: none).
    Returns `path`."""
    meta = dict(meta, runtime="saved_model")
    meta["signatures"] = write_archive(archive, path)
    if tokenizer is not None:
        write_tokenizer_files(tokenizer, path, meta.get("max_length"))
    metadata.write(path, meta)
    return path


def tflite(archive, path, meta, quantize=None):
    """Writes `archive` as the TFLite model `path` (a file) with `quantize` (see
    `runtimes.QUANTIZE`) and `meta` in its metadata table; checks that it holds no op
    outside TFLite's built-in and tensorflow-text's. Returns `path`."""
    runtimes.check_quantize(quantize)
    import tensorflow_text  # noqa: F401 (registers its ops for the converter)

    with tempfile.TemporaryDirectory() as directory:
        # Each endpoint once: a second name for one would be a second copy of its graph.
        signatures = write_archive(archive, directory, default=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(directory,
                                                             signature_keys=list(signatures))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = True  # tensorflow-text's; check_ops refuses any other
        if quantize is not None:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        flatbuffer = converter.convert()
    runtimes.check_ops(flatbuffer)
    meta = dict(meta, runtime="tflite", quantize=quantize, signatures=signatures)
    flatbuffer = metadata.embed(flatbuffer, meta)
    directory = os.path.dirname(os.fspath(path))
    if directory:
        tf.io.gfile.makedirs(directory)
    with tf.io.gfile.GFile(os.fspath(path), "wb") as f:
        f.write(flatbuffer)
    return path


def onnx_directory(model, kind, path, meta, tokenizer, quantize=None):
    """Writes the ONNX export of `model` (of kind `kind`: ids in, raw outputs out) in the
    directory `path`: `model.onnx` (`quantize`: None or "int8", see `kbert.serving.onnx`),
    the tokenizer's files and `meta` as export.json. Returns `path`."""
    from kbert.serving import onnx

    onnx.check_quantize(quantize)
    proto = onnx.model_proto(model, kind)
    if quantize == "int8":
        proto = onnx.quantized(proto)
    tf.io.gfile.makedirs(os.fspath(path))
    with tf.io.gfile.GFile(os.path.join(os.fspath(path), onnx.MODEL_FILE), "wb") as f:
        f.write(proto.SerializeToString())
    meta = dict(meta, runtime="onnx", quantize=quantize, signatures={"serving_ids": {
        "inputs": [i.name for i in proto.graph.input],
        "outputs": sorted(o.name for o in proto.graph.output)}})
    write_tokenizer_files(tokenizer, path, meta.get("max_length"))
    metadata.write(path, meta)
    return path
