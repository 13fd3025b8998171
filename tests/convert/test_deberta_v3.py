"""DeBERTa-v3 in Hugging Face format: the tiny checkpoints that transformers made
(tests/fixtures/make_hf_deberta_v3.py: a DebertaV2Model and a DebertaV2ForMaskedLM with
transformers' outputs, and a spm.model with DeBERTa's specials), imported and exported."""

import json
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import kbert.convert
from kbert.models import DebertaV3Backbone, DebertaV3Pretrainer
from tests.convert import _families

FIXTURES = _families.FIXTURES
POSITIONS = _families.POSITIONS
ATOL = 1e-4


def _reference(name):
    with np.load(FIXTURES / name / "reference.npz") as data:
        return dict(data)


def _check_outputs(model, name):
    reference = _reference(name)
    x = {"token_ids": reference["token_ids"], "padding_mask": reference["padding_mask"]}
    mask = reference["padding_mask"].astype(bool)
    backbone = getattr(model, "backbone", model)
    np.testing.assert_allclose(np.asarray(backbone(x)["sequence_output"])[mask],
                               reference["sequence_output"][mask], atol=ATOL, rtol=0)
    if backbone is not model:
        logits = np.asarray(model({**x, "mask_positions": POSITIONS})["mlm_logits"])
        expected = np.take_along_axis(reference["mlm_logits"], POSITIONS[..., None], axis=1)
        np.testing.assert_allclose(logits, expected, atol=ATOL, rtol=0)


@pytest.mark.parametrize("name,head,model_class", [
    ("deberta_v3", None, DebertaV3Backbone),
    ("deberta_v3_mlm", "pretrainer", DebertaV3Pretrainer),
])
def test_transformers_checkpoints_import_with_their_outputs(name, head, model_class):
    checkpoint = kbert.convert.read(FIXTURES / name)
    assert (checkpoint.family, checkpoint.head) == ("deberta_v3", head)
    config = checkpoint.config
    assert (config.position_buckets, config.layer_norm_epsilon, config.activation,
            config.attention_types) == (4, 1e-7, "gelu", ("c2p", "p2c"))
    model = checkpoint.build()
    assert type(model) is model_class
    _check_outputs(model, name)


def test_legacy_head_names_read_as_the_same_head(tmp_path):
    """transformers' default `legacy=True` names the head cls.predictions.*."""
    folder = tmp_path / "legacy"
    shutil.copytree(FIXTURES / "deberta_v3_mlm", folder)
    renames = {"lm_predictions.lm_head.dense": "cls.predictions.transform.dense",
               "lm_predictions.lm_head.LayerNorm": "cls.predictions.transform.LayerNorm",
               "lm_predictions.lm_head.bias": "cls.predictions.bias"}
    weights = load_file(str(folder / "model.safetensors"))
    renamed = {}
    for key, value in weights.items():
        for old, new in renames.items():
            key = key.replace(old, new)
        renamed[key] = value
    renamed["cls.predictions.decoder.weight"] = weights["deberta.embeddings.word_embeddings.weight"]
    assert not any(k.startswith("lm_predictions") for k in renamed)
    save_file(renamed, str(folder / "model.safetensors"))
    checkpoint = kbert.convert.read(folder)
    assert checkpoint.head == "pretrainer"
    _check_outputs(checkpoint.build(), "deberta_v3_mlm")


def test_tokenizer_gives_the_ids_of_transformers():
    reference = _reference("deberta_v3_mlm")
    tokenizer = kbert.convert.load_tokenizer(FIXTURES / "deberta_v3_mlm")
    assert not tokenizer.lowercase
    assert (tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.unk_id) == (
        0, 1, 2, 3)
    assert tokenizer.mask_id == int(reference["mask_id"]) == 60  # after the 60 pieces
    ids = tokenizer.tokenize(reference["sentences"]).to_list()
    expected = [[i for i in row if i >= 0] for row in reference["sentence_ids"].tolist()]
    assert ids == expected


@pytest.mark.parametrize("name", ["deberta_v3", "deberta_v3_mlm"])
def test_export_is_transformers_layout_and_round_trips(tmp_path, name):
    checkpoint = kbert.convert.read(FIXTURES / name)
    model = checkpoint.build()
    out = kbert.convert.save_hugging_face(model, tmp_path / "hf", vocabulary=(
        checkpoint.tokenizer() if checkpoint.sentencepiece_model else None))
    # The tensors transformers wrote for this class, no more and no less: it loads the
    # export with no missing or unexpected weights.
    written = load_file(str(out / "model.safetensors"))
    original = load_file(str(FIXTURES / name / "model.safetensors"))
    assert sorted(written) == sorted(original)
    for key, value in original.items():
        assert written[key].shape == value.shape, key
    values = json.loads((out / "config.json").read_text())
    expected = json.loads((FIXTURES / name / "config.json").read_text())
    for field in ("architectures", "model_type", "vocab_size", "hidden_size",
                  "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
                  "layer_norm_eps", "position_buckets", "max_relative_positions",
                  "relative_attention", "position_biased_input", "share_att_key",
                  "norm_rel_ebd", "type_vocab_size", "legacy", "tie_word_embeddings"):
        assert values[field] == expected[field], field
    assert sorted(values["pos_att_type"]) == sorted(expected["pos_att_type"])
    again = kbert.convert.read(out)
    assert again.config == checkpoint.config
    assert again.sentencepiece_model == checkpoint.sentencepiece_model
    for key, value in checkpoint.weights.items():
        assert np.array_equal(again.weights[key], value), key
    if checkpoint.sentencepiece_model:
        assert (out / "spm.model").is_file()
    _check_outputs(again.build(), name)


def test_unsupported_variants_are_refused_by_name():
    values = json.loads((FIXTURES / "deberta_v3" / "config.json").read_text())
    config_from_hf = kbert.convert.deberta_v3.config_from_hf
    for change, message in ((dict(position_biased_input=True), "position_biased_input=True"),
                            (dict(share_att_key=False), "share_att_key=False"),
                            (dict(conv_kernel_size=3), "conv_kernel_size=3"),
                            (dict(norm_rel_ebd="none"), "norm_rel_ebd='none'"),
                            (dict(position_buckets=-1), "position_buckets=-1"),
                            (dict(type_vocab_size=2), "no segment embeddings")):
        with pytest.raises(ValueError, match=message):
            config_from_hf({**values, **change})


def test_keras_hub_weights_reach_hugging_face_names():
    import keras_hub

    reference = keras_hub.models.DebertaV3Backbone(
        vocabulary_size=70, num_layers=2, num_heads=4, hidden_dim=32, intermediate_dim=64,
        max_sequence_length=24, bucket_size=4)
    config = kbert.convert.deberta_v3.config_from_keras_hub(reference.get_config())
    template = DebertaV3Backbone.from_config(config)
    weights = kbert.convert.keras_hub.keras_hub_weights(reference, template)
    expected = kbert.convert.read(FIXTURES / "deberta_v3").weights
    assert sorted(weights) == sorted(expected)
    np.testing.assert_array_equal(weights["encoder.rel_embeddings.weight"],
                                  np.asarray(reference.relative_embeddings.rel_embeddings))


@pytest.mark.parametrize("change,message", [
    (dict(vocab_size=80), r"vocab_size=80, but .* holds embeddings\.word_embeddings\.weight"),
    (dict(num_hidden_layers=3), r"num_hidden_layers=3, but .* holds 2 layers"),
    (dict(intermediate_size=48), r"intermediate_size=48, but .*intermediate\.dense"),
])
def test_config_and_tensors_of_different_models_are_refused(tmp_path, change, message):
    folder = tmp_path / "broken"
    shutil.copytree(FIXTURES / "deberta_v3_mlm", folder)
    values = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**values, **change}))
    with pytest.raises(kbert.convert.CheckpointError, match=message):
        kbert.convert.read(folder)


def test_a_sentencepiece_model_with_more_tokens_than_rows_is_refused(tmp_path):
    folder = tmp_path / "small_table"
    shutil.copytree(FIXTURES / "deberta_v3_mlm", folder)
    weights = load_file(str(folder / "model.safetensors"))
    table = "deberta.embeddings.word_embeddings.weight"
    weights[table] = weights[table][:50]
    weights["lm_predictions.lm_head.bias"] = weights["lm_predictions.lm_head.bias"][:50]
    save_file(weights, str(folder / "model.safetensors"))
    values = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**values, "vocab_size": 50}))
    # 60 pieces + [MASK]: ids the 50-row table does not have.
    with pytest.raises(kbert.convert.CheckpointError, match="spm.model holds 61 tokens, but"):
        kbert.convert.read(folder)


def test_kbert_directory_round_trips_model_and_tokenizer(tmp_path):
    checkpoint = kbert.convert.read(FIXTURES / "deberta_v3_mlm")
    model = checkpoint.build()
    tokenizer = checkpoint.tokenizer()
    kbert.convert.save_kbert(model, tmp_path / "kbert", vocabulary=tokenizer)
    assert kbert.convert.detect_format(tmp_path / "kbert") == "kbert"
    again = kbert.convert.read(tmp_path / "kbert")
    assert again.family == "deberta_v3" and again.config == checkpoint.config
    assert again.sentencepiece_model == checkpoint.sentencepiece_model
    assert not again.lowercase
    reference = _reference("deberta_v3_mlm")
    assert again.tokenizer().tokenize(reference["sentences"]).to_list() == \
        tokenizer.tokenize(reference["sentences"]).to_list()
    _check_outputs(again.build(), "deberta_v3_mlm")


def test_keras_hub_preset_directory_imports_with_equal_outputs(tmp_path):
    import keras_hub

    reference = keras_hub.models.DebertaV3Backbone(
        vocabulary_size=70, num_layers=2, num_heads=4, hidden_dim=32, intermediate_dim=64,
        max_sequence_length=24, bucket_size=4, dropout=0.0)
    rng = np.random.default_rng(0)
    for w in reference.weights:
        w.assign(rng.normal(scale=0.2, size=w.shape).astype("float32"))
    reference.save_to_preset(str(tmp_path / "preset"))
    spm = (FIXTURES / "deberta_v3_mlm" / "spm.model").read_bytes()
    keras_hub.models.DebertaV3Tokenizer(proto=spm).save_to_preset(str(tmp_path / "preset"))
    checkpoint = kbert.convert.read(tmp_path / "preset")
    assert checkpoint.family == "deberta_v3" and checkpoint.head is None
    assert checkpoint.sentencepiece_model == spm and not checkpoint.lowercase
    reference_ids = _reference("deberta_v3_mlm")
    x = {"token_ids": reference_ids["token_ids"], "padding_mask": reference_ids["padding_mask"]}
    mask = x["padding_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(checkpoint.build()(x)["sequence_output"])[mask],
                               np.asarray(reference(x))[mask], atol=1e-5, rtol=0)
    tokenizer = checkpoint.tokenizer()
    assert tokenizer.mask_id == 60
    expected = [[i for i in row if i >= 0] for row in reference_ids["sentence_ids"].tolist()]
    assert tokenizer.tokenize(reference_ids["sentences"]).to_list() == expected


def test_the_release_layout_with_pytorch_model_bin_reads_without_torch(tmp_path):
    """The files the presets download: config.json, pytorch_model.bin (torch's zip format,
    read with numpy alone), spm.model, tokenizer_config.json."""
    from tests.convert.test_refusals import torch_zip

    folder = tmp_path / "release"
    folder.mkdir()
    for name in ("config.json", "spm.model", "tokenizer_config.json"):
        shutil.copy(FIXTURES / "deberta_v3_mlm" / name, folder / name)
    weights = load_file(str(FIXTURES / "deberta_v3_mlm" / "model.safetensors"))
    (folder / "pytorch_model.bin").write_bytes(torch_zip(weights))
    checkpoint = kbert.convert.read(folder)
    expected = kbert.convert.read(FIXTURES / "deberta_v3_mlm").weights
    assert sorted(checkpoint.weights) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(checkpoint.weights[key], value, err_msg=key)
    _check_outputs(checkpoint.build(), "deberta_v3_mlm")
