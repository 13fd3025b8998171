"""Checks every task model passes with every backbone family: config and .keras round trips
with identical outputs, one train step that moves the head and the backbone (the forward +
train step under JAX: tests/test_under_jax.py)."""

import inspect
import os

import keras
import numpy as np

import kbert.models
from kbert.untrusted import load_model
from tests.helpers import TINY, random_batch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAMILIES = tuple(kbert.models.FAMILIES)  # bert, albert, distil_bert, electra, roberta, ...$
# What TINY needs besides, per family: MobileBERT's defaults are the release's 128-wide
# embeddings and bottleneck, wider than TINY's hidden size.
TINY_FAMILY = {"mobile_bert": dict(embedding_size=8, intra_bottleneck_size=16,
                                   num_feedforward_networks=2)}


def tiny_config(family, **overrides):
    return kbert.models.FAMILIES[family].config(
        **{**TINY, **TINY_FAMILY.get(family, {}), **overrides})


def tiny_backbone(family, dtype=None, **overrides):
    return kbert.models.build(family, tiny_config(family, **overrides), head=None, dtype=dtype)


def inputs_for(model, seed=0):
    """A padded batch [4, 16] with the model's input names (DistilBERT: no segment_ids)."""
    features, _ = random_batch(seed=seed)
    return {k: features[k] for k in model.input}


def numpy_outputs(model, x):
    out = model(x, training=False)
    if isinstance(out, dict):
        return {k: keras.ops.convert_to_numpy(v) for k, v in out.items()}
    return keras.ops.convert_to_numpy(out)


def assert_same_outputs(a, b, atol=0.0):
    if isinstance(a, dict):
        assert sorted(a) == sorted(b)
        for key in a:
            np.testing.assert_allclose(a[key], b[key], atol=atol, rtol=0)
    else:
        np.testing.assert_allclose(a, b, atol=atol, rtol=0)


def check_round_trips(model, tmp_path):
    """get_config -> from_config gives the same config; .keras save -> kbert.untrusted.load_model
    gives the same class, config, outputs, and the compiled loss and optimizer back."""
    config = model.get_config()
    # Every constructor argument is stored: one left out would come back as its default.
    parameters = inspect.signature(type(model).__init__).parameters.values()
    missing = [p.name for p in parameters if p.name != "self"
               and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name not in config]
    assert not missing, f"get_config() lacks {missing}"
    assert type(model).from_config(config).get_config() == config
    model.compile()
    model.optimizer.build(model.trainable_variables)  # as after training: its state is saved
    x = inputs_for(model)
    path = str(tmp_path / f"{model.name}.keras")
    model.save(path)
    restored = load_model(path)
    assert type(restored) is type(model)
    assert restored.get_config() == config
    assert_same_outputs(numpy_outputs(model, x), numpy_outputs(restored, x))
    assert isinstance(restored.optimizer, keras.optimizers.AdamW)
    np.testing.assert_allclose(float(restored.optimizer.learning_rate), 2e-5, rtol=1e-6)
    return restored


def check_train_step(model, x, y, sample_weight=None, head_weight=None):
    """One eager `train_on_batch` with the default compile(): a finite loss, and both a head
    weight and the backbone's token table change."""
    model.compile(optimizer=keras.optimizers.Adam(1e-2), run_eagerly=True)
    head_weight = model.weights[-1] if head_weight is None else head_weight
    table = model.backbone.token_embedding.embeddings
    before = [keras.ops.convert_to_numpy(w).copy() for w in (head_weight, table)]
    logs = model.train_on_batch(x, y, sample_weight=sample_weight, return_dict=True)
    assert np.isfinite(logs["loss"]), logs
    for w, old in zip((head_weight, table), before):
        assert not np.allclose(keras.ops.convert_to_numpy(w), old), w.path
    return logs
