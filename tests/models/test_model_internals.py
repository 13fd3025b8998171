"""Task models and pretrainers give their backbone's internals on request
(`model.with_internals()`, `kbert.load(..., output_hidden_states=True,
output_attentions=True)`), as transformers' `*For<Task>` models add `hidden_states` and
`attentions` to their outputs: the task's outputs unchanged, the internals those of
`Backbone.with_internals` (transformers' own: tests/models/test_internals.py), on the same
weights."""

from pathlib import Path

import keras
import numpy as np
import pytest

import kbert
import kbert.convert
from kbert.models.internals import model_with_internals
from kbert.tasks.extractive_summarization.model import ExtractiveSummarizer

FIXTURES = Path(__file__).parents[1] / "fixtures"
TASKS = FIXTURES / "hf_tasks"
TINY = FIXTURES / "hf_tiny"
REFERENCES = FIXTURES / "internals"


def stacked(tensors):
    return np.stack([np.asarray(t) for t in tensors])


def check_internals(inspected, model, x, compare_at=None):
    """`inspected` (model.with_internals()) on `x`: the model's outputs as they are (within
    float32 rounding), the backbone's internals as `Backbone.with_internals` gives them, the
    model's own weights."""
    assert [id(w) for w in inspected.weights] == [id(w) for w in model.weights]
    out = inspected(x)
    assert list(out)[-2:] == ["hidden_states", "attentions"]  # transformers' order
    plain = model(x)
    plain = plain if isinstance(plain, dict) else {model.output_name: plain}
    assert list(out)[:-2] == list(plain)
    for name, value in plain.items():
        value, got = np.asarray(value), np.asarray(out[name])
        token_level = compare_at is not None and value.shape[:2] == compare_at.shape
        at = compare_at if token_level else slice(None)
        # Two attention paths: the plain model's fused one, and the explicit one that keeps
        # the probabilities. They round differently (ModernBERT's logits differed by up to
        # 3.8e-6 on a 2-core host), so they agree within a tolerance, not bit for bit.
        np.testing.assert_allclose(got[at], value[at], atol=1e-5, rtol=1e-5, err_msg=name)
    # Both sides run the same `Backbone.with_internals` graph on the same weights: equal.
    backbone = model.backbone.with_internals()(x)
    for name in ("hidden_states", "attentions"):
        assert len(out[name]) == len(backbone[name])
        np.testing.assert_array_equal(stacked(out[name]), stacked(backbone[name]))
    return out


@pytest.mark.parametrize("name", ["bert_seq_single", "distil_bert_qa", "modern_bert_token",
                                  "st_bert_mean_normalize"])
def test_a_task_model_adds_its_backbones_internals(name):
    reference = np.load(TASKS / name / "reference.npz")
    model = kbert.load(str(TASKS / name)).model
    operations = list(model.operations)
    x = {k: reference[k] for k in model.input}
    real = reference["padding_mask"].astype(bool)
    # ModernBERT's windowed layers compute padded queries otherwise when asked for the
    # probabilities (the whole matrix, the window as a mask): outputs at padded tokens are
    # compared where they are defined, at the real ones.
    out = check_internals(model.with_internals(), model, x, compare_at=real)
    for key in ("logits", "start_logits", "end_logits", "embeddings"):
        if key in reference:
            got = np.asarray(out[key])
            at = real if got.shape[:2] == real.shape else slice(None)
            np.testing.assert_allclose(got[at], reference[key][at], atol=1e-4)
    assert list(model.operations) == operations  # the model itself is left as it was


def test_kbert_load_gives_a_task_model_with_attentions_only():
    name = TASKS / "bert_token"
    reference = np.load(name / "reference.npz")
    loaded = kbert.load(str(name), task="token-classification", output_attentions=True)
    out = loaded.model({k: reference[k] for k in loaded.model.input})
    assert list(out) == ["logits", "attentions"] and len(out["attentions"]) == 2
    real = reference["padding_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(out["logits"])[real], reference["logits"][real],
                               atol=1e-4)
    assert loaded.label_names is not None and len(loaded.label_names) == 9


def test_the_extractive_summarizer_adds_them_too():
    backbone = kbert.convert.read(TINY / "distil_bert").build(head=None)
    model = ExtractiveSummarizer(backbone)
    reference = np.load(REFERENCES / "distil_bert.npz")
    x = {k: reference[k] for k in model.input}
    out = check_internals(model.with_internals(), model, x)
    assert np.asarray(out["logits"]).shape == reference["token_ids"].shape


@pytest.mark.parametrize("name,head", [("tiny_bert_general", "auto"), ("roberta", "mlm")])
def test_a_pretrainers_internals_equal_transformers(name, head):
    reference = np.load(REFERENCES / f"{name}.npz")
    mask = reference["padding_mask"]
    loaded = kbert.load(str(TINY / name), head=head, output_hidden_states=True,
                        output_attentions=True)
    x = {"token_ids": reference["token_ids"], "padding_mask": mask,
         "segment_ids": np.zeros_like(mask), "mask_positions": np.array([[1, 2]] * len(mask))}
    out = loaded.model({k: v for k, v in x.items() if k in loaded.model.input})
    assert list(out)[-2:] == ["hidden_states", "attentions"] and "mlm_logits" in out
    real = mask.astype(bool)
    np.testing.assert_allclose(stacked(out["hidden_states"])[:, real],
                               reference["hidden_states"][:, real], atol=1e-4)
    np.testing.assert_allclose(stacked(out["attentions"]).transpose(0, 1, 3, 2, 4)[:, real],
                               reference["attentions"].transpose(0, 1, 3, 2, 4)[:, real],
                               atol=1e-4)
    plain = kbert.load(str(TINY / name), head=head).model
    np.testing.assert_allclose(np.asarray(out["mlm_logits"]),
                               np.asarray(plain({k: v for k, v in x.items()
                                                 if k in plain.input})["mlm_logits"]),
                               atol=1e-5)


def test_electras_pretrainer_gives_the_discriminators_on_the_corrupted_input():
    model = kbert.load(str(TINY / "electra")).model
    reference = np.load(REFERENCES / "electra.npz")
    mask = reference["padding_mask"]
    inspected = model.with_internals(hidden_states=False)
    assert [id(w) for w in inspected.weights] == [id(w) for w in model.weights]
    out = inspected({"token_ids": reference["token_ids"], "padding_mask": mask,
                     "segment_ids": np.zeros_like(mask),
                     "mask_positions": np.array([[1, 2]] * len(mask))})
    assert list(out) == ["mlm_logits", "replaced_token_ids", "rtd_logits", "attentions"]
    discriminator = model.backbone.with_internals(hidden_states=False)(
        {"token_ids": np.asarray(out["replaced_token_ids"]), "padding_mask": mask,
         "segment_ids": np.zeros_like(mask)})
    np.testing.assert_allclose(stacked(out["attentions"]),
                               stacked(discriminator["attentions"]), atol=1e-6)


def test_what_cannot_give_internals_is_refused(tmp_path):
    model = kbert.load(str(TASKS / "distil_bert_seq_single")).model
    with pytest.raises(ValueError, match="hidden_states=True or attentions=True"):
        model.with_internals(hidden_states=False, attentions=False)

    class Subclassed(keras.Model):
        backbone = model.backbone

        def call(self, x):
            return self.backbone(x)

    with pytest.raises(ValueError, match="A Subclassed is not a functional Keras model"):
        model_with_internals(Subclassed())
    inputs = keras.Input((3,))
    with pytest.raises(ValueError, match="A Functional has no kbert backbone .* a NoneType"):
        model_with_internals(keras.Model(inputs, keras.layers.Dense(2)(inputs)))
    twice = keras.Model(model.input, [model.backbone(model.input)["sequence_output"],
                                      model.backbone(model.input)["sequence_output"]])
    twice.backbone = model.backbone
    with pytest.raises(ValueError, match="calls its backbone 2 times"):
        model_with_internals(twice)
    (tmp_path / "saved_model.pb").write_bytes(b"")
    with pytest.raises(ValueError, match="is a SavedModel, loaded as it was exported"):
        kbert.load(str(tmp_path), output_hidden_states=True)


def test_the_inspector_still_takes_backbones_only():
    """kbert.analysis.Inspector reads a backbone's internals (and its config's length): a
    task model, which has with_internals now too, is refused as before, naming the way."""
    from kbert import analysis

    loaded = kbert.load(str(TASKS / "distil_bert_seq_single"))
    with pytest.raises(TypeError, match="TextClassifier, which is built on one: pass its "
                                        r"\.backbone"):
        analysis.Inspector(loaded.model, loaded.tokenizer)
    analysis.Inspector(loaded.model.backbone, loaded.tokenizer)
