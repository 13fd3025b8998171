"""The checks every kbert layer must pass (docs/design.md): config round-trip, output shape,
one `fit` step that changes the weights, and a `mixed_bfloat16` forward pass."""

import inspect

import keras
import numpy as np


def check_config_round_trip(layer, not_in_config=()):
    """`not_in_config`: constructor arguments that are deliberately not serialized (a tied
    layer, which the owning model passes again)."""
    config = layer.get_config()
    # Every constructor argument is stored: one left out would come back as its default.
    parameters = inspect.signature(type(layer).__init__).parameters.values()
    missing = [p.name for p in parameters if p.name != "self"
               and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
               and p.name not in config and p.name not in not_in_config]
    assert not missing, f"get_config() lacks {missing}"
    clone = layer.__class__.from_config(config)
    assert clone.get_config() == config
    # The registered name makes the layer deserializable by name, as .keras files need.
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(restored) is type(layer)
    assert restored.get_config() == config


def check_fit_step(make_layer, inputs, call=None):
    """Wraps the layer in a model, runs one `fit` step, and checks every weight moved."""
    call = call or (lambda layer, tensors: layer(*tensors))
    symbolic = [keras.Input(shape=x.shape[1:], dtype=str(x.dtype)) for x in inputs]
    layer = make_layer()
    out = call(layer, symbolic)
    model = keras.Model(symbolic, out)
    before = [keras.ops.convert_to_numpy(w) for w in layer.trainable_weights]
    # A random target: a constant one sends no gradient through a final LayerNorm.
    shape = keras.ops.convert_to_numpy(model(list(inputs))).shape
    target = np.random.default_rng(0).normal(size=shape).astype("float32")
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    history = model.fit(list(inputs), target, epochs=1, batch_size=len(inputs[0]), verbose=0)
    assert np.isfinite(history.history["loss"][0])
    after = [keras.ops.convert_to_numpy(w) for w in layer.trainable_weights]
    assert before, "the layer has no trainable weights"
    moved = [not np.allclose(a, b) for a, b in zip(before, after)]
    assert all(moved), [w.path for w, m in zip(layer.trainable_weights, moved) if not m]


def check_mixed_bfloat16(make_layer, inputs, call=None):
    call = call or (lambda layer, tensors: layer(*tensors))
    layer = make_layer(dtype="mixed_bfloat16")
    out = call(layer, inputs)
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
    assert all(keras.backend.standardize_dtype(w.dtype) == "float32" for w in layer.weights)
    assert np.all(np.isfinite(np.array(keras.ops.cast(out, "float32"))))
