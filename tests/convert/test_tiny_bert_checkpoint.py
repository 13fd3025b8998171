"""TinyBERT's released general students (issue 20; the tiny_bert_* presets) are BERT in the
files of huawei-noah's own code, not transformers': a config.json without model_type or
architectures (with keys of its own), and TinyBertForPreTraining's state dict (`bert.*`,
`cls.*`, `fit_dense.*`) in pytorch_model.bin. tests/fixtures/hf_tiny/tiny_bert_general is a tiny
random checkpoint in that layout (make_hf_tiny_bert.py), with transformers' outputs on it."""

import json
import logging
import shutil

import keras
import numpy as np
import pytest
from safetensors.numpy import load_file

import kbert.convert
from kbert import models
from kbert.convert import families
from tests.convert._families import FIXTURES, check_against_transformers

FOLDER = FIXTURES / "tiny_bert_general"


def test_the_fixture_is_in_tiny_berts_layout():
    config = json.loads((FOLDER / "config.json").read_text())
    assert "model_type" not in config and "architectures" not in config
    assert {"cell", "emb_size", "pre_trained", "structure", "training"} <= set(config)
    assert sorted(p.name for p in FOLDER.iterdir()) == [
        "config.json", "pytorch_model.bin", "reference.npz", "vocab.txt"]


def test_a_tiny_bert_release_loads_as_bert_with_transformers_outputs(caplog):
    with caplog.at_level(logging.INFO):
        model = kbert.convert.load(FOLDER)
    assert isinstance(model, models.BertPretrainer)  # its cls.* heads: MLM and NSP
    assert "not used by the pretrainer model: fit_dense.bias, fit_dense.weight" in caplog.text
    check_against_transformers(model, "tiny_bert_general")  # sequence, MLM and NSP logits
    with np.load(FOLDER / "reference.npz") as reference:
        x = {k: reference[k] for k in ("token_ids", "segment_ids", "padding_mask")}
        pooled = keras.ops.convert_to_numpy(model.backbone(x)["pooled_output"])
        np.testing.assert_allclose(pooled, reference["pooled_output"], atol=1e-5)
    checkpoint = kbert.convert.read(FOLDER)
    assert checkpoint.family == "bert" and checkpoint.head == "pretrainer"
    assert checkpoint.weights["fit_dense.weight"].shape == (24, 16)  # kept for distillation
    assert checkpoint.lowercase  # no tokenizer_config.json: an uncased vocab.txt
    assert isinstance(kbert.convert.load(FOLDER, head=None), models.BertBackbone)


def test_a_tiny_bert_release_goes_out_as_a_transformers_bert(tmp_path):
    checkpoint = kbert.convert.read(FOLDER)
    out = kbert.convert.hugging_face.write(checkpoint, tmp_path / "hf")
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "bert"
    assert config["architectures"] == ["BertForPreTraining"]
    written = load_file(str(out / "model.safetensors"))
    assert not any("fit_dense" in name for name in written)
    check_against_transformers(kbert.convert.load(out), "tiny_bert_general")


@pytest.mark.parametrize("change, message", [
    ({"embedding_size": 8}, "it has embedding_size"),
    ({"architectures": ["RobertaForMaskedLM"]}, "it has RobertaForMaskedLM"),
    ({"num_hidden_layers": None}, "it lacks num_hidden_layers"),
])
def test_a_config_without_model_type_that_is_not_berts_is_refused(tmp_path, change, message):
    folder = tmp_path / "x"
    shutil.copytree(FOLDER, folder)
    config = {**json.loads((folder / "config.json").read_text()), **change}
    config = {k: v for k, v in config.items() if v is not None}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=f"config.json has no model_type, .*{message}.* Add "
                                         "the model_type, one of albert, bert"):
        kbert.convert.read(folder)
    assert families.by_config({"model_type": "albert"}) is families.get("albert")
