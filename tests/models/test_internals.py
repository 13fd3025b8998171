"""Every family's backbone gives, on request (`Backbone.with_internals`), each layer's hidden
states and attention probabilities equal to transformers' `hidden_states` and `attentions`
(tests/fixtures/make_internals_reference.py: tiny random checkpoints, a padded batch), and
computes neither when not asked."""

from pathlib import Path

import numpy as np
import pytest

import kbert
import kbert.convert

FOLDER = Path(__file__).parents[1] / "fixtures" / "hf_tiny"
REFERENCES = Path(__file__).parents[1] / "fixtures" / "internals"
MODELS = ("albert", "deberta_v3", "distil_bert", "electra", "mobile_bert", "roberta",
          "tiny_bert_general")


@pytest.mark.parametrize("name", MODELS)
def test_hidden_states_and_attentions_equal_transformers(name):
    reference = np.load(REFERENCES / f"{name}.npz")
    backbone = kbert.convert.read(FOLDER / name).build(head=None)
    inspected = backbone.with_internals()
    # The inspecting model runs on the backbone's own weights.
    assert {id(w) for w in inspected.weights} == {id(w) for w in backbone.weights}
    mask = reference["padding_mask"]
    inputs = {"token_ids": reference["token_ids"], "padding_mask": mask,
              "segment_ids": np.zeros_like(mask)}
    outputs = inspected({k: v for k, v in inputs.items() if k in backbone.input})
    real = mask.astype(bool)  # transformers' outputs at padded queries are not compared
    hidden = np.stack([np.asarray(h) for h in outputs["hidden_states"]])
    assert hidden.shape == reference["hidden_states"].shape
    np.testing.assert_allclose(hidden[:, real], reference["hidden_states"][:, real], atol=1e-5)
    attentions = np.stack([np.asarray(a) for a in outputs["attentions"]])
    assert attentions.shape == reference["attentions"].shape
    np.testing.assert_allclose(attentions.transpose(0, 1, 3, 2, 4)[:, real],
                               reference["attentions"].transpose(0, 1, 3, 2, 4)[:, real],
                               atol=1e-5)
    padded_keys = np.broadcast_to(~real[None, :, None, None, :], attentions.shape)
    assert padded_keys.any() and np.all(attentions[padded_keys] == 0)
    np.testing.assert_allclose(np.asarray(outputs["sequence_output"]), hidden[-1], atol=1e-6)


def test_asking_for_nothing_is_refused():
    backbone = kbert.convert.read(FOLDER / "electra").build(head=None)
    with pytest.raises(ValueError, match="hidden_states=True or attentions=True"):
        backbone.with_internals(hidden_states=False, attentions=False)
    only = backbone.with_internals(attentions=False)
    assert "hidden_states" in only.output and "attentions" not in only.output


def test_kbert_load_takes_transformers_options():
    loaded = kbert.load(str(FOLDER / "distil_bert"), head=None, output_attentions=True)
    reference = np.load(REFERENCES / "distil_bert.npz")
    outputs = loaded.model({"token_ids": reference["token_ids"],
                            "padding_mask": reference["padding_mask"]})
    assert "hidden_states" not in outputs and len(outputs["attentions"]) == 2
    assert loaded.max_sequence_length == 24
    # A pretrainer takes them too (tests/models/test_model_internals.py).
    pretrainer = kbert.load(str(FOLDER / "distil_bert"), output_hidden_states=True).model
    assert list(pretrainer.output) == ["mlm_logits", "hidden_states"]


def graph_ops(model):
    """Op type -> count in the TensorFlow graph of `model` (training=False) on open shapes."""
    import collections

    import tensorflow as tf

    spec = {k: tf.TensorSpec([None, None], tf.int32, k) for k in model.input}
    graph = tf.function(lambda x: model(x, training=False)).get_concrete_function(spec).graph
    return collections.Counter(op.type for op in graph.get_operations())


@pytest.mark.parametrize("name", ["tiny_bert_general", "modern_bert"])
def test_a_backbone_asked_for_nothing_computes_nothing_more(name):
    """Internals cost nothing when off: the backbone's graph holds no probability outputs
    (its blocks are called as they are, no `_WithProbabilities`), and collecting the hidden
    states adds no operation to it: they are tensors the graph computes anyway. (Measured
    once against the commit before with_internals, 639a15f^: every family's traced graph had
    the same operations, type by type: 406 for tiny_bert_general, 1078 for deberta_v3, ...)"""
    backbone = kbert.convert.read(FOLDER / name).build(head=None)
    assert set(backbone.output) <= {"sequence_output", "pooled_output"}
    names = [type(op).__name__ for op in backbone.operations]
    assert "_WithProbabilities" not in names
    blocks = [op for op in backbone.operations if op in backbone.transformer_layers]
    assert blocks == list(backbone.transformer_layers)  # each block called once, as it is
    plain = graph_ops(backbone)
    hidden = graph_ops(backbone.with_internals(attentions=False))
    # More outputs, the same computation (Identity ops aside, one per output).
    hidden.pop("Identity", None), plain.pop("Identity", None)
    assert hidden == plain
    attentions = graph_ops(backbone.with_internals(hidden_states=False))
    attentions.pop("Identity", None)
    assert attentions != plain  # written out to return the probabilities
