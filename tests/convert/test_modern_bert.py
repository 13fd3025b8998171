"""ModernBERT in Hugging Face format: the tiny checkpoints that transformers made
(tests/fixtures/make_hf_modern_bert.py: a ModernBertModel with every bias off and a
ModernBertForMaskedLM with every bias on, windows of 4 and 6 on 20 tokens, a global layer
every 2nd) read with transformers' outputs on a padded batch, and written back; the task
checkpoints (tests/fixtures/make_modern_bert_tasks.py) are also read by
test_task_checkpoints.py with every other family's."""

import json
import shutil

import numpy as np
import pytest

import kbert.convert
from kbert.models import ModernBertBackbone, ModernBertPretrainer
from tests.convert import _families, _tasks

FIXTURES = _families.FIXTURES
ATOL = 1e-4
POSITIONS = np.array([[0, 9, 19], [1, 6, 12], [0, 3, 6]], "int32")  # real tokens only


def _reference(name):
    with np.load(FIXTURES / name / "reference.npz") as data:
        return dict(data)


def _inputs(reference):
    return {"token_ids": reference["token_ids"], "padding_mask": reference["padding_mask"]}


def _check_outputs(model, name):
    reference = _reference(name)
    x, real = _inputs(reference), reference["padding_mask"].astype(bool)
    backbone = getattr(model, "backbone", model)
    np.testing.assert_allclose(np.asarray(backbone(x)["sequence_output"])[real],
                               reference["sequence_output"][real], atol=ATOL, rtol=0)
    if backbone is not model:
        logits = np.asarray(model({**x, "mask_positions": POSITIONS})["mlm_logits"])
        expected = np.take_along_axis(reference["mlm_logits"], POSITIONS[..., None], axis=1)
        np.testing.assert_allclose(logits, expected, atol=ATOL, rtol=0)


@pytest.mark.parametrize("name,head,model_class,radius,biases", [
    ("modern_bert", None, ModernBertBackbone, 2, False),
    ("modern_bert_mlm", "pretrainer", ModernBertPretrainer, 3, True),
])
def test_transformers_checkpoints_import_with_their_outputs(name, head, model_class, radius,
                                                            biases):
    checkpoint = kbert.convert.read(FIXTURES / name)
    assert (checkpoint.family, checkpoint.head) == ("modern_bert", head)
    config = checkpoint.config
    assert (config.window_radius, config.global_attn_every_n_layers, config.norm_bias,
            config.attention_bias, config.mlp_bias, config.decoder_bias) == (
        radius, 2, biases, biases, biases, biases)
    model = checkpoint.build()
    assert type(model) is model_class
    _check_outputs(model, name)


@pytest.mark.parametrize("name", ["modern_bert", "modern_bert_mlm"])
def test_internals_are_transformers_hidden_states_and_attentions(name):
    reference = _reference(name)
    backbone = kbert.convert.load(FIXTURES / name, head=None)
    outputs = backbone.with_internals()(_inputs(reference))
    real = reference["padding_mask"].astype(bool)
    hidden = np.stack([np.asarray(h) for h in outputs["hidden_states"]])
    np.testing.assert_allclose(hidden[:, real], reference["hidden_states"][:, real], atol=ATOL,
                               rtol=0)
    # The attentions of the real queries (a padded query's row is not an output).
    attentions = np.stack([np.asarray(a) for a in outputs["attentions"]])
    rows = real[None, :, None, :, None]
    np.testing.assert_allclose(np.where(rows, attentions, 0),
                               np.where(rows, reference["attentions"], 0), atol=ATOL, rtol=0)


def test_written_checkpoints_read_back_the_same(tmp_path):
    model = kbert.convert.load(FIXTURES / "modern_bert_mlm")
    kbert.convert.save_hugging_face(model, tmp_path / "out")
    written = json.loads((tmp_path / "out" / "config.json").read_text())
    original = json.loads((FIXTURES / "modern_bert_mlm" / "config.json").read_text())
    assert written["architectures"] == ["ModernBertForMaskedLM"]
    for field in ("model_type", "hidden_activation", "classifier_activation", "local_attention",
                  "global_attn_every_n_layers", "global_rope_theta", "local_rope_theta",
                  "norm_eps", "norm_bias", "attention_bias", "mlp_bias", "classifier_bias",
                  "decoder_bias", "intermediate_size", "vocab_size"):
        assert written[field] == original[field], field
    again = kbert.convert.read(tmp_path / "out")
    before = kbert.convert.read(FIXTURES / "modern_bert_mlm")
    assert again.config == before.config and sorted(again.weights) == sorted(before.weights)
    for key, value in before.weights.items():
        np.testing.assert_array_equal(again.weights[key], value, err_msg=key)
    _check_outputs(again.build(), "modern_bert_mlm")


def test_a_task_checkpoint_with_task_none_is_its_encoder_not_a_masked_lm():
    """A task checkpoint's head.dense / head.norm are its classifier's prediction head: with
    task=None it loads as the encoder (the MLM's head needs the decoder it lacks)."""
    checkpoint = kbert.convert.read(_tasks.FIXTURES / "modern_bert_seq_multi")
    assert checkpoint.head is None
    assert type(kbert.convert.load(_tasks.FIXTURES / "modern_bert_seq_multi",
                                   task=None)) is ModernBertBackbone


def test_a_classifier_pooling_other_than_the_config_goes_out_as_classifier_pooling(tmp_path):
    """head="mean" on a backbone whose config says "cls": written as classifier_pooling
    "mean" (transformers reads the pooling there), read back as the same model."""
    from kbert.tasks import TextClassifier

    backbone = kbert.convert.load(_tasks.FIXTURES / "modern_bert_seq_single", task=None)
    assert backbone.config.classifier_pooling == "cls"
    model = TextClassifier(backbone, num_classes=2, head="mean")
    assert model.head == "mean" and model.prediction_head is not None
    tokenizer = kbert.convert.load_tokenizer(_tasks.FIXTURES / "modern_bert_seq_single")
    kbert.convert.save_hugging_face(model, tmp_path / "out", vocabulary=tokenizer)
    written = json.loads((tmp_path / "out" / "config.json").read_text())
    assert (written["architectures"], written["classifier_pooling"]) == (
        ["ModernBertForSequenceClassification"], "mean")
    again = kbert.convert.load(tmp_path / "out")
    assert again.head == "mean"
    arrays = _tasks.reference("modern_bert_seq_single")
    x = _tasks.features(arrays, model, "text_")
    np.testing.assert_allclose(np.asarray(again(x)), np.asarray(model(x)), atol=1e-6)


def test_mean_pooling_is_modern_berts_alone():
    from kbert.models import BertBackbone
    from kbert.tasks import TextClassifier

    backbone = BertBackbone(vocabulary_size=30, num_layers=1, hidden_size=8, num_heads=2,
                            intermediate_size=16)
    with pytest.raises(ValueError, match="head='mean' is ModernBERT's mean pooling"):
        TextClassifier(backbone, num_classes=2, head="mean")


def test_rope_scaling_is_refused(tmp_path):
    folder = tmp_path / "scaled"
    shutil.copytree(FIXTURES / "modern_bert", folder)
    config = json.loads((folder / "config.json").read_text())
    config["rope_scaling"] = {"rope_type": "linear", "factor": 2.0}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"rope_scaling=.*kbert's ModernBERT has plain rotary"):
        kbert.convert.read(folder)

