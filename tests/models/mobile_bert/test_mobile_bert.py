"""MobileBERT: transformers' outputs on its own tiny checkpoints (tests/fixtures/
make_hf_mobile_bert.py), Hugging Face export and import, the released sizes, .keras round
trips, mixed_bfloat16 and a train step under JAX."""

import json
import shutil

import keras
import numpy as np
import pytest

import kbert
import kbert.convert
from kbert.convert import CheckpointError
from kbert.models import MobileBertBackbone, MobileBertConfig, MobileBertPretrainer
from tests.convert import _families
from tests.helpers import TINY, random_batch, shapes_only
from tests.models import _family_checks

FIXTURES = _families.FIXTURES
POSITIONS = _families.POSITIONS
# Float32 noise is under 2e-7; the LayerNorm variant's epsilon (1e-5 where transformers
# builds two norms without the config's 1e-12) shows up as 1.5e-5.
ATOL = 1e-6
MOBILE = dict(TINY, embedding_size=8, intra_bottleneck_size=16, num_feedforward_networks=2)


def _reference(name):
    with np.load(FIXTURES / name / "reference.npz") as data:
        return dict(data)


def _close(got, expected, what, mask=None):
    got, expected = np.asarray(got), np.asarray(expected)
    if mask is not None:
        got, expected = got[mask], expected[mask]
    np.testing.assert_allclose(got, expected, atol=ATOL, rtol=0, err_msg=what)


def check_against_transformers(model, name):
    """Every hidden state (embeddings, then each layer), the pooled output and the heads'
    logits equal transformers' for fixture `name`."""
    reference = _reference(name)
    assert reference["sequence_output"].std() > 0.1  # not a degenerate fixture
    backbone = getattr(model, "backbone", model)
    x = {k: reference[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    mask = x["padding_mask"].astype(bool)
    hidden = backbone.embeddings(x["token_ids"], x["segment_ids"])
    _close(hidden, reference["hidden_states"][0], "embeddings", mask)
    for i, block in enumerate(backbone.transformer_layers):
        hidden = block(hidden, padding_mask=x["padding_mask"])
        _close(hidden, reference["hidden_states"][i + 1], f"layer {i}", mask)
    outputs = backbone(x)
    _close(outputs["sequence_output"], reference["sequence_output"], "sequence", mask)
    _close(outputs["pooled_output"], reference["pooled_output"], "pooled")
    if model is not backbone:
        y = model({**x, "mask_positions": POSITIONS})
        expected = np.take_along_axis(reference["mlm_logits"], POSITIONS[..., None], axis=1)
        _close(y["mlm_logits"], expected, "mlm_logits")
        _close(y["nsp_logits"], reference["nsp_logits"], "nsp_logits")


@pytest.mark.parametrize("name,head,config", [
    ("mobile_bert", "pretrainer", dict(normalization_type="no_norm", trigram_input=True,
                                       classifier_activation=False,
                                       num_feedforward_networks=3)),
    ("mobile_bert_layer_norm", None, dict(normalization_type="layer_norm",
                                          trigram_input=False, classifier_activation=True,
                                          num_feedforward_networks=1)),
])
def test_hugging_face_checkpoints_import_with_the_outputs_of_transformers(name, head, config):
    checkpoint = kbert.convert.read(FIXTURES / name)
    assert (checkpoint.family, checkpoint.head) == ("mobile_bert", head)
    assert {k: getattr(checkpoint.config, k) for k in config} == config
    assert (checkpoint.config.embedding_size, checkpoint.config.intra_bottleneck_size,
            checkpoint.config.hidden_size) == (8, 8, 16)
    model = checkpoint.build()
    assert type(model) is (MobileBertPretrainer if head else MobileBertBackbone)
    check_against_transformers(model, name)


def test_hugging_face_export_then_import_round_trips_exactly(tmp_path):
    checkpoint = kbert.convert.read(FIXTURES / "mobile_bert")
    out = kbert.convert.hugging_face.write(checkpoint, tmp_path / "hf")
    written = json.loads((out / "config.json").read_text())
    original = json.loads((FIXTURES / "mobile_bert" / "config.json").read_text())
    assert written["architectures"] == ["MobileBertForPreTraining"]
    for key in ("model_type", "embedding_size", "intra_bottleneck_size", "true_hidden_size",
                "num_feedforward_networks", "normalization_type", "trigram_input",
                "classifier_activation", "use_bottleneck", "key_query_shared_bottleneck",
                "use_bottleneck_attention", "hidden_act", "vocab_size"):
        assert written[key] == original[key], key
    again = kbert.convert.read(out)
    assert again.config == checkpoint.config and again.vocabulary == checkpoint.vocabulary
    assert sorted(again.weights) == sorted(checkpoint.weights)
    for key, value in checkpoint.weights.items():
        assert np.array_equal(again.weights[key], value), key
    check_against_transformers(again.build(), "mobile_bert")


def test_a_kbert_pretrainer_exports_every_weight(tmp_path):
    model = MobileBertPretrainer(MobileBertBackbone(**MOBILE))
    _family_checks.randomize(model)
    kbert.convert.save_hugging_face(model, tmp_path / "hf")
    imported = kbert.convert.load(tmp_path / "hf")
    assert isinstance(imported, MobileBertPretrainer)
    names = {w.path for w in model.weights}
    assert names == {w.path for w in imported.weights}
    table = model.backbone.embeddings.token_embedding.embeddings.path
    for a, b in zip(model.weights, imported.weights):
        expected = keras.ops.convert_to_numpy(a).copy()
        if a.path == table:  # [PAD]'s row goes out as zeros (test_mobile_bert_pad_row.py)
            expected[0] = 0
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(b), expected, err_msg=a.path)


def test_unsupported_options_and_mismatched_weights_are_refused(tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(FIXTURES / "mobile_bert", folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "use_bottleneck_attention": True}))
    with pytest.raises(CheckpointError, match="use_bottleneck_attention=True"):
        kbert.convert.read(folder)
    # The headers disagree with the config: refused before anything is built.
    (folder / "config.json").write_text(json.dumps({**config, "intra_bottleneck_size": 4,
                                                    "true_hidden_size": 4}))
    with pytest.raises(CheckpointError, match="intra_bottleneck_size=4.*bottleneck.input"):
        kbert.convert.read(folder)


def test_a_sequence_gives_the_same_outputs_alone_and_in_a_padded_batch():
    """The 3-token window of a sequence's last token sees zeros after it whether the batch
    pads the sequence or not, whatever the pad id's row of the token table holds (a model
    trained in kbert may have moved it off zero; here it is random)."""
    backbone = MobileBertBackbone(**MOBILE)
    table = backbone.get_layer("embeddings").token_embedding.embeddings
    assert np.abs(keras.ops.convert_to_numpy(table)[0]).max() > 0  # [PAD]'s row
    ids = np.array([[2, 11, 12, 13, 3]], "int32")
    alone = backbone({"token_ids": ids, "segment_ids": np.zeros_like(ids),
                      "padding_mask": np.ones_like(ids)})["sequence_output"]
    padded_ids = np.array([[2, 11, 12, 13, 3, 0, 0], [2, 14, 15, 16, 17, 18, 3]], "int32")
    mask = (np.arange(7)[None] < np.array([[5], [7]])).astype("int32")
    padded = backbone({"token_ids": padded_ids, "segment_ids": np.zeros_like(padded_ids),
                       "padding_mask": mask})["sequence_output"]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(padded)[0, :5],
                               keras.ops.convert_to_numpy(alone)[0], atol=1e-5)


def test_config_validation():
    with pytest.raises(ValueError, match="intra_bottleneck_size=18 is not divisible"):
        MobileBertConfig(**{**MOBILE, "intra_bottleneck_size": 18})
    with pytest.raises(ValueError, match="embedding_size=64 is larger than hidden_size=32"):
        MobileBertConfig(**{**MOBILE, "embedding_size": 64})
    with pytest.raises(ValueError, match="Unknown normalization_type 'batch_norm'"):
        MobileBertConfig(**MOBILE, normalization_type="batch_norm")
    with pytest.raises(ValueError, match="Unknown MobileBERT config field 'bottleneck'"):
        MobileBertConfig.from_dict({**MOBILE, "bottleneck": 4})


@pytest.mark.parametrize("classifier_activation", [False, True])
def test_config_and_keras_round_trip(tmp_path, classifier_activation):
    backbone = MobileBertBackbone(**MOBILE, classifier_activation=classifier_activation)
    _family_checks.randomize(backbone)
    _family_checks.check_config_and_keras_round_trip(backbone, tmp_path)


def test_pretrainer_keras_round_trip_and_train_step(tmp_path):
    model = MobileBertPretrainer(MobileBertBackbone(**MOBILE))
    features, labels = random_batch()
    model.compile(optimizer="adamw")
    logs = model.train_on_batch(features, labels, return_dict=True)
    assert {"mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy"} <= set(logs)
    assert np.isfinite(logs["loss"])
    # The MLM head scores against the tied 8-wide table and 24 rows of its own.
    assert model.mlm_head.token_embedding is model.backbone.token_embedding
    assert tuple(model.mlm_head.extra_output_kernel.shape) == (97, 32 - 8)
    path = str(tmp_path / "pretrainer.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.mlm_head.token_embedding is restored.backbone.token_embedding
    for key, value in model(features).items():
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(restored(features)[key]),
                                      keras.ops.convert_to_numpy(value))


def test_mixed_bfloat16_forward():
    model = kbert.models.build("mobile_bert", MobileBertConfig(**MOBILE), dtype="mixed_bfloat16")
    features, _ = random_batch()
    outputs = model(features)
    for value in outputs.values():
        assert keras.backend.standardize_dtype(value.dtype) == "bfloat16"
        assert np.all(np.isfinite(keras.ops.convert_to_numpy(keras.ops.cast(value, "float32"))))
    assert all(keras.backend.standardize_dtype(w.dtype) == "float32" for w in model.weights)


def test_released_parameter_counts():
    """transformers' MobileBertModel of google/mobilebert-uncased's config: 24,581,888 weights
    (no pooler dense: classifier_activation is false there), 24,844,544 with the pooler dense
    (transformers' default, classifier_activation=True); MobileBertForPreTraining 36,597,564."""
    model = shapes_only(lambda: kbert.presets.load("mobile_bert", weights=None))
    assert isinstance(model, MobileBertPretrainer) and model.next_sentence_prediction
    assert model.backbone.count_params() == 24_581_888
    assert model.count_params() == 36_597_564
    config = kbert.presets.config("mobile_bert", classifier_activation=True)
    assert shapes_only(lambda: MobileBertBackbone.from_config(config)).count_params() == 24_844_544
