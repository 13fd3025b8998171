"""kbert.serving.metadata: what an export says of itself, in a SavedModel's export.json and in
a .tflite file's metadata table."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.serving import metadata, writer


def _archive():
    layer = keras.layers.Dense(2, kernel_initializer="ones")
    layer.build((None, 3))
    archive = keras.export.ExportArchive()
    archive.track(layer)
    archive.add_endpoint("serving_default", lambda x: {"y": layer(x)},
                         [tf.TensorSpec([None, 3], tf.float32, name="x")])
    return archive


def test_describe_keeps_json_and_refuses_what_json_cannot_hold():
    meta = metadata.describe(runtime="saved_model", task="text-classification",
                             model="text_classifier", label_names=("a", "b"),
                             max_length=np.int64(16), options={"top_k": np.int32(2),
                                                               "labels": ("x", "y")})
    assert meta["label_names"] == ["a", "b"] and meta["max_length"] == 16
    assert meta["options"] == {"top_k": 2, "labels": ["x", "y"]}
    assert meta["format"] == "kbert-export" and meta["kbert_version"]
    json.dumps(meta)
    with pytest.raises(TypeError, match="must be JSON .* got object"):
        metadata.describe(runtime="tflite", task="t", model="m", options={"f": object()})


def test_a_saved_model_and_a_tflite_file_read_back_what_was_written(tmp_path):
    meta = metadata.describe(runtime="saved_model", task="feature-extraction",
                             model="backbone", max_length=8)
    writer.saved_model(_archive(), tmp_path / "saved", meta)
    read = metadata.read(tmp_path / "saved")
    assert {k: read[k] for k in meta if k != "runtime"} == \
        {k: v for k, v in meta.items() if k != "runtime"}
    assert read["signatures"] == {"serving_default": {"inputs": ["x"], "outputs": ["y"]}}

    writer.tflite(_archive(), tmp_path / "model.tflite", meta, quantize=None)
    read = metadata.read(tmp_path / "model.tflite")
    assert read["runtime"] == "tflite" and read["task"] == "feature-extraction"
    assert read["quantize"] is None and read["signatures"]["serving_default"]["outputs"] == ["y"]
    # The file still runs, and embedding twice keeps one entry.
    data = (tmp_path / "model.tflite").read_bytes()
    again = metadata.embed(data, dict(meta, task="other"))
    assert metadata._from_flatbuffer(again)["task"] == "other"
    interpreter = tf.lite.Interpreter(model_content=again)
    run = interpreter.get_signature_runner("serving_default")
    np.testing.assert_allclose(run(x=np.ones([1, 3], np.float32))["y"], [[3.0, 3.0]])


def test_what_is_not_a_kbert_export_reads_as_none_or_is_refused(tmp_path):
    assert metadata.read(tmp_path) is None  # a directory without export.json
    (tmp_path / "export.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(ValueError, match="not a kbert export's"):
        metadata.read(tmp_path)
    newer = metadata.describe(runtime="saved_model", task="t", model="m")
    newer["schema"] = metadata.SCHEMA + 1
    (tmp_path / "export.json").write_text(json.dumps(newer))
    with pytest.raises(ValueError, match="export schema 2; this kbert reads schema 1 and "
                                         "older. Upgrade kbert."):
        metadata.read(tmp_path)
