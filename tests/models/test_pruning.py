"""Structured pruning of a backbone (`kbert.models.pruning`): heads, feed-forward units and
layers removed give what the full backbone gives with those parts masked to zero (a layer:
skipped), for every family with BERT's block; the pruned backbone's config keeps each layer's
sizes and it saves and reloads; what cannot be pruned, or cannot hold, is refused by name."""

from pathlib import Path

import keras
import numpy as np
import pytest

import kbert
import kbert.convert
from kbert.models import BertBackbone, BertConfig, pruning

TASKS = Path(__file__).parents[1] / "fixtures" / "hf_tasks"
PRUNABLE = ("bert", "roberta", "electra", "distil_bert")


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
    """The backbone's outputs with the blocks `skipped` left out of its stack."""
    hidden = backbone.embeddings(x["token_ids"], x.get("segment_ids"),
                                 **({"padding_mask": x["padding_mask"]}
                                    if backbone.position_offset else {}))
    for index, block in enumerate(backbone.transformer_layers):
        if index not in skipped:
            hidden = block(hidden, padding_mask=x["padding_mask"])
    out = {"sequence_output": hidden}
    if backbone.pooler is not None:
        out["pooled_output"] = backbone.pooler(hidden)
    return out


@pytest.mark.parametrize("family", PRUNABLE)
def test_pruned_is_the_full_model_with_those_parts_masked(family, tmp_path):
    backbone = _backbone(family)
    x = _inputs(backbone)
    heads, units = {0: [1]}, {0: [0, 3], 1: [5, 7, 40]}
    small = pruning.pruned(backbone, heads=heads, units=units)
    assert type(small) is type(backbone)
    assert pruning.structure(small) == ([1, 2], [46, 45])
    assert (small.config.layer_heads, small.config.layer_intermediate_sizes) == ((1, 2),
                                                                               (46, 45))
    assert small.count_params() < backbone.count_params()
    masked = pruning.masked(backbone, heads=heads, units=units)
    want = masked(x)
    assert not np.allclose(want["sequence_output"], backbone(x)["sequence_output"], atol=1e-3)
    _close(small(x), want)
    # The pruned backbone saves and reloads as itself.
    small.save(tmp_path / "small.keras")
    _close(keras.saving.load_model(tmp_path / "small.keras")(x), want)
    # A layer removed: the rest of the stack, renumbered.
    fewer = pruning.pruned(backbone, layers=[0], units={1: [2]})
    assert pruning.structure(fewer) == ([2], [47])
    assert [b.name for b in fewer.transformer_layers] == ["transformer_layer_0"]
    _close(fewer(x), _skipping(pruning.masked(backbone, units={1: [2]}), x, {0}))


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
    for family in ("albert", "deberta_v3", "modern_bert"):
        with pytest.raises(ValueError, match="BERT's block .*BertBackbone, RobertaBackbone"):
            pruning.pruned(_backbone(family), heads={0: [0]})


def test_per_layer_sizes_in_the_config():
    config = BertConfig(100, 2, 8, 2, 16, layer_heads=[1, 2], layer_intermediate_sizes=(3, 16))
    assert config.layer_heads == (1, 2) and config.layer_sizes(0) == {
        "num_heads": 1, "intermediate_size": 3}
    backbone = BertBackbone.from_config(config.to_dict())
    assert [(b.num_heads, b.head_size, b.intermediate_size)
            for b in backbone.transformer_layers] == [(1, 4, 3), (2, 4, 16)]
    with pytest.raises(ValueError, match=r"layer_heads=\[1\]: one int per layer, 2"):
        BertConfig(100, 2, 8, 2, 16, layer_heads=[1])
    with pytest.raises(ValueError, match=r"layer_intermediate_sizes\[0\]=0: each layer's "
                                         r"size is an integer > 0"):
        BertConfig(100, 2, 8, 2, 16, layer_intermediate_sizes=[0, 4])
    from kbert.models import AlbertConfig

    with pytest.raises(ValueError, match="ALBERT's layers all have the same heads"):
        AlbertConfig(100, 2, 8, 2, 16, layer_heads=[1, 2])


def test_a_pruned_backbone_has_no_hugging_face_checkpoint(tmp_path):
    small = pruning.pruned(_backbone("bert"), heads={0: [0]})
    with pytest.raises(ValueError, match=r"pruned model \(layer_heads=\(1, 2\)\) has no "
                                         r"Hugging Face checkpoint.*model.keras"):
        kbert.convert.save_hugging_face(small, tmp_path / "out")
