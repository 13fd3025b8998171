"""kbert.serving.writer.write_archive: what ExportArchive.write_out writes, each endpoint
traced once (write_out traces twice)."""

import keras
import numpy as np
import tensorflow as tf

from kbert.serving.writer import write_archive


def _archive(traces):
    layer = keras.layers.Dense(2, kernel_initializer="ones")
    layer.build((None, 3))
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant(["a", "b"]), tf.constant([1, 2],
                                                                                 tf.int64)),
        default_value=0)

    def serve(x):
        traces.append("serve")
        return {"y": layer(x)}

    def lookup(text):
        traces.append("lookup")
        return {"id": table.lookup(text)}

    archive = keras.export.ExportArchive()
    archive.track(layer)
    archive.track(table)
    archive.add_endpoint("serve", serve, [tf.TensorSpec([None, 3], tf.float32)])
    archive.add_endpoint("lookup", lookup, [tf.TensorSpec([None], tf.string)])
    return archive


def test_each_endpoint_is_traced_once_and_the_saved_model_is_write_outs(tmp_path):
    traces = []
    _archive(traces).write_out(str(tmp_path / "keras"), verbose=False)
    assert sorted(traces) == ["lookup", "lookup", "serve", "serve"]  # why write_archive
    traces = []
    write_archive(_archive(traces), tmp_path / "kbert")
    assert sorted(traces) == ["lookup", "serve"]

    ours, theirs = (tf.saved_model.load(str(tmp_path / name)) for name in ("kbert", "keras"))
    assert sorted(ours.signatures) == sorted(theirs.signatures) == [
        "lookup", "serve", "serving_default"]
    x = tf.constant([[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(ours.signatures["serving_default"](x=x)["y"],
                                  theirs.signatures["serve"](x=x)["y"])
    assert ours.signatures["lookup"](text=tf.constant(["b", "z"]))["id"].numpy().tolist() \
        == [2, 0]
