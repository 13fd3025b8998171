"""What an export says of itself (`describe`): what a reader needs and cannot safely work
out from the graph. A SavedModel, and an ONNX export's directory, keep it as `export.json`;
a `.tflite` file keeps the same JSON in the flatbuffer's own metadata table, under
`kbert_export` (TFLite's converter stores its own there), so that it travels with the file.
`read(path)` gives it back; `kbert.pipelines.saved_model_source` and `onnx_source` load by
it.
"""

import json
import os

FILE = "export.json"
TFLITE_NAME = "kbert_export"
FORMAT = "kbert-export"
SCHEMA = 1


def _json(value):
    """`value` with tuples as lists and NumPy scalars and arrays as Python values; a value
    JSON has no form for is a TypeError naming it."""
    import numpy as np

    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return _json(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"An export option must be JSON (numbers, strings, lists, dicts), got "
                    f"{type(value).__name__} {value!r}.")


def describe(*, runtime, task, model, label_names=None, problem_type=None, max_length=None,
             options=None, tokenizer=None, **extra):
    """The metadata of one export (a dict; the writer adds `signatures`).

    Args:
        runtime: "saved_model", "tflite" or "onnx".
        task: the pipeline name it answers as ("text-classification"), or the task
            record's name for an export of kbert's own signatures ("text_classifier").
        model: the kind of model whose raw outputs `serving_ids` returns (a task record's
            name: "text_classifier", "backbone", ...).
        label_names, problem_type: a labelled model's class names and problem type (None:
            not stated, as a checkpoint without one).
        max_length: the longest input in tokens (what a reader truncates to).
        options: the options fixed in the graph (the pipeline's call options given).
        tokenizer: the tokenizer in the graph (its class name is recorded).
        extra: further fields of the task ("windows", "segments" of a summarizer).
    """
    from kbert import __version__

    meta = {"format": FORMAT, "schema": SCHEMA, "kbert_version": __version__,
            "runtime": runtime, "task": task, "model": model,
            "label_names": None if label_names is None else list(label_names),
            "problem_type": problem_type,
            "max_length": None if max_length is None else int(max_length),
            "options": dict(options or {}),
            "tokenizer": None if tokenizer is None else type(tokenizer).__name__,
            **extra}
    return _json(meta)


def write(directory, meta):
    """`meta` as `directory`/export.json."""
    import tensorflow as tf

    with tf.io.gfile.GFile(os.path.join(os.fspath(directory), FILE), "w") as f:
        f.write(json.dumps(meta, indent=1, sort_keys=True) + "\n")


def embed(flatbuffer, meta):
    """The TFLite model `flatbuffer` (bytes) with `meta` in its metadata table, as
    `kbert_export` (replacing one there)."""
    import flatbuffers
    import numpy as np
    from tensorflow.lite.python import schema_py_generated as schema

    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(bytearray(flatbuffer), 0))
    buffer = schema.BufferT()
    # As a NumPy array: the object API packs those in one copy (a list: byte by byte).
    buffer.data = np.frombuffer(json.dumps(meta, sort_keys=True).encode("utf-8"), np.uint8)
    model.buffers.append(buffer)
    entry = schema.MetadataT()
    entry.name = TFLITE_NAME
    entry.buffer = len(model.buffers) - 1
    model.metadata = [m for m in (model.metadata or [])
                      if m.name not in (TFLITE_NAME, TFLITE_NAME.encode())] + [entry]
    builder = flatbuffers.Builder(len(flatbuffer) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _from_flatbuffer(data):
    from tensorflow.lite.python import schema_py_generated as schema

    model = schema.Model.GetRootAsModel(bytearray(data), 0)
    for i in range(model.MetadataLength()):
        entry = model.Metadata(i)
        if entry.Name() == TFLITE_NAME.encode():
            return json.loads(model.Buffers(entry.Buffer()).DataAsNumpy().tobytes())
    return None


def read(path):
    """The metadata of the export at `path` (a SavedModel directory or a `.tflite` file), or
    None where it has none (not written by kbert)."""
    import tensorflow as tf

    path = os.fspath(path)
    if tf.io.gfile.isdir(path):
        where = os.path.join(path, FILE)
        if not tf.io.gfile.exists(where):
            return None
        with tf.io.gfile.GFile(where) as f:
            meta = json.load(f)
    else:
        with tf.io.gfile.GFile(path, "rb") as f:
            meta = _from_flatbuffer(f.read())
        if meta is None:
            return None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{path}: its {FILE} is not a kbert export's (format "
                         f"{meta.get('format') if isinstance(meta, dict) else meta!r}).")
    if meta.get("schema", 0) > SCHEMA:
        raise ValueError(f"{path} was written by kbert {meta.get('kbert_version')} with "
                         f"export schema {meta['schema']}; this kbert reads schema "
                         f"{SCHEMA} and older. Upgrade kbert.")
    return meta
