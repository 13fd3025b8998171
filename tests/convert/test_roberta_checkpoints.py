"""RoBERTa checkpoints: a tiny `RobertaForMaskedLM` made by transformers with its byte-level BPE
(tests/fixtures/make_hf_roberta.py, with transformers' outputs and ids), round trips through
the Hugging Face and kbert formats, and keras-hub presets."""

import json

import keras_hub
import numpy as np
import pytest
from safetensors.numpy import load_file

import kbert.convert
from kbert.models import RobertaBackbone, RobertaPretrainer
from kbert.tokenizers import BytePairTokenizer
from tests.convert import _checkpoints, _families

FOLDER = _families.FIXTURES / "roberta"
POSITIONS = _families.POSITIONS
ATOL = 1e-4


def _reference():
    return load_file(str(FOLDER / "reference.safetensors"))


def check_against_transformers(model):
    """`model`'s outputs equal those transformers computed (row 1 is padded on the left)."""
    reference = _reference()
    x = {"token_ids": reference["token_ids"], "padding_mask": reference["padding_mask"]}
    mask = x["padding_mask"].astype(bool)
    backbone = getattr(model, "backbone", model)
    sequence = np.asarray(backbone(x)["sequence_output"])
    np.testing.assert_allclose(sequence[mask], reference["sequence_output"][mask], atol=ATOL,
                               rtol=0)
    if backbone is not model:
        logits = np.asarray(model({**x, "mask_positions": POSITIONS})["mlm_logits"])
        expected = np.take_along_axis(reference["mlm_logits"], POSITIONS[..., None], axis=1)
        np.testing.assert_allclose(logits, expected, atol=ATOL, rtol=0)


def test_hugging_face_roberta_imports_with_the_outputs_of_transformers():
    checkpoint = kbert.convert.read(FOLDER)
    assert (checkpoint.family, checkpoint.head) == ("roberta", "pretrainer")
    config = checkpoint.config
    assert (config.max_sequence_length, config.type_vocab_size, config.layer_norm_epsilon,
            config.activation) == (24, 1, 1e-5, "gelu")  # 26 positions - padding index - 1
    model = checkpoint.build()
    assert isinstance(model, RobertaPretrainer)
    check_against_transformers(model)
    backbone = checkpoint.build(head=None)
    assert isinstance(backbone, RobertaBackbone)
    check_against_transformers(backbone)


def test_the_checkpoints_tokenizer_gives_transformers_ids():
    with open(FOLDER / "reference.json", encoding="utf-8") as f:
        reference = json.load(f)
    tokenizer = kbert.convert.load_tokenizer(FOLDER)
    assert isinstance(tokenizer, BytePairTokenizer)
    assert tokenizer.tokenize(reference["sentences"]).to_list() == reference["ids"]
    # transformers' pair: <s> A </s></s> B </s>, where "<mask>" takes the space before it.
    kept = BytePairTokenizer(tokenizer.vocabulary, tokenizer.merges, split_special_tokens=False)
    a, b = kept.tokenize(["the <mask> word", "they said"]).to_list()
    c, s = kept.cls_id, kept.sep_id
    assert reference["pair_with_mask"] == [c, *a, s, s, *b, s]


def test_hugging_face_export_then_import_round_trips_exactly(tmp_path):
    checkpoint = kbert.convert.read(FOLDER)
    out = kbert.convert.hugging_face.write(checkpoint, tmp_path / "hf")
    assert (out / "vocab.json").is_file() and (out / "merges.txt").is_file()
    written = json.loads((out / "config.json").read_text())
    original = json.loads((FOLDER / "config.json").read_text())
    for key in ("architectures", "max_position_embeddings", "pad_token_id", "type_vocab_size",
                "layer_norm_eps", "hidden_act", "vocab_size", "model_type"):
        assert written[key] == original[key], key
    again = kbert.convert.read(out)
    assert again.config == checkpoint.config and again.family == "roberta"
    assert again.vocabulary == checkpoint.vocabulary and again.merges == checkpoint.merges
    assert sorted(again.weights) == sorted(checkpoint.weights)
    for key, value in checkpoint.weights.items():
        assert np.array_equal(again.weights[key], value), key
    check_against_transformers(again.build())


def test_a_kbert_model_saves_with_its_tokenizer_in_both_formats(tmp_path):
    checkpoint = kbert.convert.read(FOLDER)
    model, tokenizer = checkpoint.build(), checkpoint.tokenizer()
    kbert.convert.save_hugging_face(model, tmp_path / "hf", vocabulary=tokenizer)
    kbert.convert.save_kbert(model.backbone, tmp_path / "kbert", vocabulary=tokenizer)
    for folder in (tmp_path / "hf", tmp_path / "kbert"):
        again = kbert.convert.read(folder)
        assert again.merges == tokenizer.merges and not again.lowercase
        text = ["Naïve café 😀", " the word"]
        assert again.tokenizer().tokenize(text).to_list() == tokenizer.tokenize(text).to_list()
    check_against_transformers(kbert.convert.load(tmp_path / "hf"))
    check_against_transformers(kbert.convert.load(tmp_path / "kbert"))


def test_unsupported_variants_are_refused_by_name():
    values = json.loads((FOLDER / "config.json").read_text())
    with pytest.raises(ValueError, match="pad_token_id=0; kbert's RoBERTa counts"):
        kbert.convert.roberta.config_from_hf({**values, "pad_token_id": 0})
    with pytest.raises(ValueError, match="position_embedding_type='relative_key'"):
        kbert.convert.roberta.config_from_hf({**values, "position_embedding_type":
                                              "relative_key"})


def test_keras_hub_preset_imports_with_equal_outputs(tmp_path):
    tokenizer = kbert.convert.load_tokenizer(FOLDER)
    reference = keras_hub.models.RobertaBackbone(
        vocabulary_size=tokenizer.vocabulary_size, num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=24, dropout=0.0)
    _checkpoints.randomise(reference)
    reference.save_to_preset(str(tmp_path / "preset"))
    keras_hub.models.RobertaTokenizer(
        vocabulary={t: i for i, t in enumerate(tokenizer.vocabulary)},
        merges=[f"{a} {b}" for a, b in tokenizer.merges]).save_to_preset(str(tmp_path / "preset"))
    checkpoint = kbert.convert.read(tmp_path / "preset")
    assert (checkpoint.family, checkpoint.head) == ("roberta", None)
    assert checkpoint.vocabulary == tokenizer.vocabulary
    assert checkpoint.merges == tokenizer.merges
    backbone = checkpoint.build()
    x = _checkpoints.inputs(vocabulary_size=tokenizer.vocabulary_size)  # right-padded
    x = {k: x[k] for k in backbone.input}
    mask = x["padding_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(backbone(x)["sequence_output"])[mask],
                               np.asarray(reference(x))[mask], atol=1e-5, rtol=0)
