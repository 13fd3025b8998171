"""Structured pruning of a backbone (`kbert.models.pruning`): heads, feed-forward units and
layers removed give what the full backbone gives with those parts masked to zero (a layer:
skipped), for every family that can be pruned; the pruned backbone's config keeps each
block's sizes and it saves and reloads; what cannot be pruned, or cannot hold, is refused by
name."""

from pathlib import Path

import keras
import numpy as np
import pytest

import kbert
import kbert.convert
from kbert.models import BertBackbone, BertConfig, pruning
from kbert.models.backbone import NO_INTERNALS

TASKS = Path(__file__).parents[1] / "fixtures" / "hf_tasks"
PRUNABLE = ("bert", "roberta", "electra", "distil_bert", "albert", "deberta_v3",
            "mobile_bert", "modern_bert")


def _backbone(family):
    return kbert.load(str(TASKS / f"{family}_seq_single")).model.backbone


def _inputs(backbone):
    ids = np.array([[5, 9, 11, 14, 3, 0, 0], [7, 8, 21, 4, 6, 10, 12]], np.int32)
    x = {"token_ids": ids, "padding_mask": (ids > 0).astype(np.int32)}
    if "segment_ids" in backbone.input:
        x["segment_ids"] = np.array([[0, 0, 0, 1, 1, 0, 0], [0] * 7], np.int32)
    return x


def _close(got, want):
    for key in want:
        np.testing.assert_allclose(np.asarray(got[key]), np.asarray(want[key]), atol=1e-5,
                                   err_msg=key)


def _skipping(backbone, x, skipped):
    """The backbone's outputs through its own network with the layers `skipped` left out
    (their blocks, where a block runs one layer; ALBERT's shared block runs fewer times)."""
    config = backbone.config
    kept = [i for i in range(config.num_layers) if i not in skipped]
    layers = {name: getattr(backbone, name) for name in backbone._layer_names}
    blocks = layers["transformer_layers"]
    if len(blocks) == config.num_layers:
        layers["transformer_layers"] = [blocks[i] for i in kept]
    return backbone.network(config.replace(num_layers=len(kept)), layers, x, NO_INTERNALS)


@pytest.mark.parametrize("family", PRUNABLE)
def test_pruned_is_the_full_model_with_those_parts_masked(family, tmp_path):
    backbone = _backbone(family)
    x = _inputs(backbone)
    head_counts, unit_counts = pruning.structure(backbone)
    last = len(head_counts) - 1  # the last block (ALBERT's one shared block: 0)
    heads, units = {0: [1]}, {0: [0, 3], last: [0, 3, 5, 7, 20]}
    small = pruning.pruned(backbone, heads=heads, units=units)
    assert type(small) is type(backbone)
    want_heads = [n - len(heads.get(i, [])) for i, n in enumerate(head_counts)]
    want_units = [n - len(units.get(i, [])) for i, n in enumerate(unit_counts)]
    assert pruning.structure(small) == (want_heads, want_units)
    assert small.config.layer_heads == tuple(want_heads)
    if family == "mobile_bert":  # its feed-forward networks' widths, the first two pruned
        width, count = (backbone.config.intermediate_size,
                        backbone.config.num_feedforward_networks)
        assert count > 1 and small.config.layer_feedforward_sizes[0] == (
            (width - 2,) + (width,) * (count - 1))
        assert [sum(sizes) for sizes in small.config.layer_feedforward_sizes] == want_units
    else:
        assert small.config.layer_intermediate_sizes == tuple(want_units)
    assert small.count_params() < backbone.count_params()
    masked = pruning.masked(backbone, heads=heads, units=units)
    want = masked(x)
    assert not np.allclose(want["sequence_output"], backbone(x)["sequence_output"], atol=1e-3)
    _close(small(x), want)
    # The pruned backbone saves and reloads as itself.
    small.save(tmp_path / "small.keras")
    _close(keras.saving.load_model(tmp_path / "small.keras")(x), want)
    # The first layer removed: the rest of the stack, renumbered.
    fewer = pruning.pruned(backbone, layers=[0], units={last: [2]})
    assert fewer.config.num_layers == backbone.config.num_layers - 1
    assert [b.name for b in fewer.transformer_layers][0] == "transformer_layer_0"
    _close(fewer(x), _skipping(pruning.masked(backbone, units={last: [2]}), x, {0}))
    fewer.save(tmp_path / "fewer.keras")
    _close(keras.saving.load_model(tmp_path / "fewer.keras")(x), fewer(x))


def test_what_cannot_be_pruned_says_why():
    backbone = _backbone("bert")
    with pytest.raises(ValueError, match=r"removes all 2 heads of layer 0.*layers=\[0\]"):
        pruning.pruned(backbone, heads={0: [0, 1]})
    with pytest.raises(ValueError, match=r"heads \[2\] of layer 1: it has 2 \(indices 0 to 1"):
        pruning.pruned(backbone, heads={1: [2]})
    with pytest.raises(ValueError, match=r"units names layer 2; the model has 2 layers"):
        pruning.pruned(backbone, units={2: [0]})
    with pytest.raises(ValueError, match=r"removes every layer of the 2"):
        pruning.pruned(backbone, layers=[0, 1])
    with pytest.raises(ValueError, match=r"layers names layer -1"):
        pruning.pruned(backbone, layers=[-1])
    with pytest.raises(ValueError, match=r"heads of layer 0: 1.5 is not an index"):
        pruning.pruned(backbone, heads={0: [1.5]})
    adapted = _backbone("bert")
    adapted.enable_lora(2)
    with pytest.raises(ValueError, match="LoRA adapters.*Save and reload"):
        pruning.pruned(adapted, heads={0: [0]})
    inputs = keras.Input((None,), dtype="int32")
    with pytest.raises(ValueError, match="blocks of BERT, .*ModernBERT; this is a Functional"):
        pruning.pruned(keras.Model(inputs, keras.layers.Embedding(9, 4)(inputs)), heads={})
    # A MobileBERT block's units: its feed-forward networks', each keeps one.
    mobile = _backbone("mobile_bert")
    width = mobile.config.intermediate_size
    with pytest.raises(ValueError, match=rf"removes all {width} units of feed-forward network "
                                         rf"1 of layer 0 \(units {width} to {2 * width - 1}"):
        pruning.pruned(mobile, units={0: range(width, 2 * width)})
    # ALBERT's heads and units are its blocks' (num_groups), its layers its own.
    albert = _backbone("albert")
    with pytest.raises(ValueError, match=r"heads names block 1; the model has 1 blocks "
                                         r"\(0 to 0\) \(its layers share blocks"):
        pruning.pruned(albert, heads={1: [0]})
    with pytest.raises(ValueError, match=r"removes all 2 heads of block 0.*remove its layers"):
        pruning.pruned(albert, heads={0: [0, 1]})
    from kbert.models import AlbertBackbone, AlbertConfig

    grouped = AlbertBackbone.from_config(AlbertConfig(100, 4, 8, 2, 16, num_groups=2).to_dict())
    with pytest.raises(ValueError, match=r"blocks serving 1 \(block 0\), 2 \(block 1\) "
                                         r"layers; each of its num_groups=2 blocks"):
        pruning.pruned(grouped, layers=[0])
    assert pruning.pruned(grouped, layers=[0, 2]).config.num_groups == 2
    assert pruning.pruned(grouped, layers=[0, 1]).config.num_groups == 1
    # The blocks a removal leaves: ALBERT's shared block stays while a layer runs it.
    assert pruning.kept_blocks(albert, [0]) == [0]
    assert pruning.kept_blocks(grouped, [0, 1]) == [1]
    assert pruning.kept_blocks(backbone, [0]) == [1]


def test_per_layer_sizes_in_the_config():
    config = BertConfig(100, 2, 8, 2, 16, layer_heads=[1, 2], layer_intermediate_sizes=(3, 16))
    assert config.layer_heads == (1, 2) and config.layer_sizes(0) == {
        "num_heads": 1, "intermediate_size": 3}
    backbone = BertBackbone.from_config(config.to_dict())
    assert [(b.num_heads, b.head_size, b.intermediate_size)
            for b in backbone.transformer_layers] == [(1, 4, 3), (2, 4, 16)]
    with pytest.raises(ValueError, match=r"layer_heads=\[1\]: one int per block, 2 "
                                         r"\(num_layers\)"):
        BertConfig(100, 2, 8, 2, 16, layer_heads=[1])
    with pytest.raises(ValueError, match=r"layer_intermediate_sizes\[0\]=0: each layer's "
                                         r"size is an integer > 0"):
        BertConfig(100, 2, 8, 2, 16, layer_intermediate_sizes=[0, 4])
    from kbert.models import AlbertConfig

    with pytest.raises(ValueError, match=r"layer_heads=\[1, 2\]: one int per block, 1 "
                                         r"\(num_groups\)"):
        AlbertConfig(100, 2, 8, 2, 16, layer_heads=[1, 2])
    assert AlbertConfig(100, 4, 8, 2, 16, num_groups=2, layer_heads=[1, 2]).layer_sizes(1) == {
        "num_heads": 2, "intermediate_size": 16}


def test_a_pruned_backbone_has_no_hugging_face_checkpoint(tmp_path):
    small = pruning.pruned(_backbone("bert"), heads={0: [0]})
    with pytest.raises(ValueError, match=r"pruned model \(layer_heads=\(1, 2\)\) has no "
                                         r"Hugging Face checkpoint.*model.keras"):
        kbert.convert.save_hugging_face(small, tmp_path / "out")
    # ModernBERT's layers keep their kinds where a layer goes: transformers numbers them.
    modern = pruning.pruned(_backbone("modern_bert"), layers=[0])
    assert modern.config.first_layer_norm and modern.config.num_layers == 2
    with pytest.raises(ValueError, match=r"pruned model \(global_layers=\(False, True\), "
                                         r"first_layer_norm=True\) has no Hugging Face"):
        kbert.convert.save_hugging_face(modern, tmp_path / "modern")
