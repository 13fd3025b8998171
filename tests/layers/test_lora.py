"""LoRA on kbert's encoders (`kbert.layers.lora`, `Backbone.enable_lora`): the fused
attention projection's update is low-rank as a map from the hidden size to the q, k and v
of every head; only the adapters (and the pooler, and the head) train; saving merges them;
every family takes it."""

from pathlib import Path

import keras
import numpy as np
import pytest

import kbert
from tests.tasks._checks import FAMILIES, inputs_for, numpy_outputs, tiny_backbone

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf_tasks"
TOY = [("good film", "POSITIVE"), ("bad film", "NEGATIVE"), ("a good one", "POSITIVE"),
       ("a bad one", "NEGATIVE"), ("good and fun", "POSITIVE"), ("bad and dull", "NEGATIVE"),
       ("so good", "POSITIVE"), ("so bad", "NEGATIVE")] * 4


def test_the_fused_projection_gets_one_low_rank_map_per_kernel():
    backbone = tiny_backbone("bert")  # hidden 32, 4 heads of 8
    block = backbone.transformer_layers[0]
    block.qkv_dense.enable_lora(2)
    assert tuple(block.qkv_dense.lora_kernel_a.shape) == (32, 2)
    assert tuple(block.qkv_dense.lora_kernel_b.shape) == (2, 3, 4, 8)
    block.attention_output_dense.enable_lora(2)  # kernel [heads, head_size, hidden]
    assert tuple(block.attention_output_dense.lora_kernel_a.shape) == (4, 8, 2)
    assert tuple(block.attention_output_dense.lora_kernel_b.shape) == (2, 32)
    # The kernel it runs is W + (alpha / rank) A B, as a [hidden, 3 * heads * head_size] map.
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(32, 2)), rng.normal(size=(2, 3, 4, 8))
    block.qkv_dense.lora_kernel_a.assign(a)
    block.qkv_dense.lora_kernel_b.assign(b)
    base = keras.ops.convert_to_numpy(block.qkv_dense._kernel).reshape(32, -1)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(block.qkv_dense.kernel).reshape(32, -1),
        base + a @ b.reshape(2, -1), atol=1e-5)
    with pytest.raises(ValueError, match="lora is already enabled"):
        block.qkv_dense.enable_lora(2)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_takes_lora_and_starts_where_it_was(family):
    backbone = tiny_backbone(family)
    x = inputs_for(backbone)
    before = numpy_outputs(backbone, x)
    total = sum(int(np.prod(v.shape)) for v in backbone.weights)
    trainable = backbone.enable_lora(2, keep_trainable=())
    assert 0 < trainable < total / 2
    names = {v.path.split("/")[-1] for v in backbone.trainable_weights}
    assert {"lora_kernel_a", "lora_kernel_b"} <= names
    assert "kernel" not in names and "embeddings" not in names
    after = numpy_outputs(backbone, x)  # B starts at zero: the same model
    for key in before:
        np.testing.assert_allclose(after[key], before[key], atol=1e-6)
    with pytest.raises(ValueError, match="LoRA rank must be a positive integer, got 0"):
        tiny_backbone(family).enable_lora(0)


def test_lora_is_enabled_once_and_keep_trainable_names_layers():
    backbone = tiny_backbone("bert")
    with pytest.raises(ValueError, match=r"keep_trainable is a list of layer names, got the "
                                         r"string 'pooler'; pass \('pooler',\)"):
        backbone.enable_lora(2, keep_trainable="pooler")
    with pytest.raises(ValueError, match=r"keep_trainable names \['poolr'\]"):
        backbone.enable_lora(2, keep_trainable=("poolr",))
    trainable = backbone.enable_lora(2)
    with pytest.raises(ValueError, match="LoRA is already enabled on BertBackbone \\(rank 2"):
        backbone.enable_lora(4)
    # The refusal changed nothing: the same weights train.
    assert sum(int(np.prod(v.shape)) for v in backbone.trainable_weights) == trainable


def test_a_classifier_trains_its_adapters_only_and_saves_merged(tmp_path):
    model = kbert.load(str(FIXTURES / "bert_token"), task="text-classification",
                       label_names=["NEGATIVE", "POSITIVE"], sequence_length=16).model
    trainable = model.backbone.enable_lora(4)
    frozen = {v.path: keras.ops.convert_to_numpy(v) for v in model.backbone.weights
              if v.path.endswith("/kernel") and "pooler" not in v.path}
    adapters = {v.path: keras.ops.convert_to_numpy(v) for v in model.backbone.weights
                if "lora_kernel_b" in v.path}
    assert trainable < sum(int(np.prod(v.shape)) for v in model.backbone.weights) / 2
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    texts, labels = [t for t, _ in TOY], [l for _, l in TOY]
    before = model.evaluate(texts, labels, verbose=0)[0]
    model.fit(texts, labels, epochs=3, batch_size=8, verbose=0)
    assert model.evaluate(texts, labels, verbose=0)[0] < before
    for path, value in frozen.items():
        now = next(v for v in model.backbone.weights if v.path == path)
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(now), value, err_msg=path)
    assert any(not np.array_equal(keras.ops.convert_to_numpy(v), adapters[v.path])
               for v in model.backbone.weights if v.path in adapters)
    predictions = model.predict(texts[:6])
    model.save(str(tmp_path / "lora.keras"))
    reloaded = kbert.load(str(tmp_path / "lora.keras")).model
    assert not any("lora" in v.path for v in reloaded.weights)  # merged into the kernels
    np.testing.assert_allclose(reloaded.predict(texts[:6]), predictions, atol=1e-5)


def test_under_a_mixed_policy_saving_merges_in_float32():
    """The forward pass adds the update in the compute dtype (bfloat16); what saving writes is
    the merge in the kernel's float32, not rounded to bfloat16."""
    backbone = tiny_backbone("bert", dtype="mixed_bfloat16")
    layer = backbone.transformer_layers[0].qkv_dense
    layer.enable_lora(2)
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(32, 2)) * 1e-2, rng.normal(size=(2, 3, 4, 8)) * 1e-2
    layer.lora_kernel_a.assign(a)
    layer.lora_kernel_b.assign(b)
    store = {}
    layer.save_own_variables(store)
    base = keras.ops.convert_to_numpy(layer._kernel)
    expected = base + (layer.lora_alpha / layer.lora_rank) * np.tensordot(a, b, axes=1)
    saved = np.asarray(store["0"])
    assert saved.dtype == np.float32
    np.testing.assert_allclose(saved, expected, atol=1e-7)
    assert keras.ops.convert_to_numpy(layer.kernel).dtype != np.float32  # bfloat16 in use
