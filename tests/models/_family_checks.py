"""Checks every backbone family passes: shapes, config and .keras round trips, keras-hub
parity with the same weights (the forward + train step under JAX: tests/test_under_jax.py,
one process for every family)."""

import os

import keras
import numpy as np

from tests.helpers import random_batch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def inputs_for(backbone):
    features, _ = random_batch()
    return {k: features[k] for k in backbone.input}


def numpy_outputs(model, inputs):
    return {k: keras.ops.convert_to_numpy(v) for k, v in model(inputs).items()}


def check_config_and_keras_round_trip(backbone, tmp_path):
    config = backbone.get_config()
    assert type(backbone).from_config(config).get_config() == config
    path = str(tmp_path / "backbone.keras")
    backbone.save(path)
    restored = keras.saving.load_model(path)  # safe_mode on
    assert type(restored) is type(backbone)
    x = inputs_for(backbone)
    for key, value in numpy_outputs(backbone, x).items():
        np.testing.assert_array_equal(numpy_outputs(restored, x)[key], value)


def randomize(model, seed=7):
    """Random, non-trivial values everywhere (biases and LayerNorm too)."""
    rng = np.random.default_rng(seed)
    for w in model.weights:
        w.assign(rng.normal(scale=0.2, size=w.shape).astype("float32")
                 + w.path.endswith("gamma"))


def check_parity(reference, ours, atol=1e-5):
    from kbert.convert.keras_hub import weights_from_keras_hub

    randomize(reference)
    weights_from_keras_hub(reference, ours)
    x = inputs_for(ours)
    expected = reference(x)
    if not isinstance(expected, dict):  # DistilBertBackbone returns the sequence alone
        expected = {"sequence_output": expected}
    got = numpy_outputs(ours, x)
    assert set(got) == set(expected)
    mask = x["padding_mask"].astype(bool)
    np.testing.assert_allclose(got["sequence_output"][mask],
                               keras.ops.convert_to_numpy(expected["sequence_output"])[mask],
                               atol=atol, rtol=0)
    if "pooled_output" in got:
        np.testing.assert_allclose(got["pooled_output"],
                                   keras.ops.convert_to_numpy(expected["pooled_output"]),
                                   atol=atol, rtol=0)
    assert ours.count_params() == reference.count_params()
