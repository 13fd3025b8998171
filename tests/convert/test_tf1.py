"""Original google-research/bert TF1 checkpoints into kbert, and out to Hugging Face format."""

import numpy as np
import pytest

import kbert.convert
from kbert.convert import tf1
from tests.convert import _checkpoints


def test_tf1_release_imports_with_equal_outputs(tmp_path):
    original = _checkpoints.random_pretrainer()
    folder = _checkpoints.write_tf1_release(original, tmp_path / "release")
    assert kbert.convert.detect_format(folder) == "tf1"
    checkpoint = kbert.convert.read(folder)
    # google-research's "gelu" is the tanh form; the optimizer slots are not weights.
    assert checkpoint.config == original.backbone.config
    assert checkpoint.head == "pretrainer"
    assert not any("adam" in name or "step" in name for name in checkpoint.weights)
    imported = checkpoint.build()
    _checkpoints.assert_same_outputs(original, imported, _checkpoints.inputs())
    backbone = kbert.convert.load(folder / "bert_model.ckpt", head=None)  # a prefix works too
    _checkpoints.assert_same_outputs(original.backbone, backbone, _checkpoints.inputs())
    tokenizer = checkpoint.tokenizer()
    assert tokenizer.lowercase and tokenizer.vocabulary == _checkpoints.VOCABULARY


def test_mlm_only_checkpoint_and_head_choice(tmp_path):
    original = _checkpoints.random_pretrainer(head="mlm")
    folder = _checkpoints.write_tf1_release(original, tmp_path / "release")
    checkpoint = kbert.convert.read(folder)
    assert checkpoint.head == "mlm"
    _checkpoints.assert_same_outputs(original, checkpoint.build(), _checkpoints.inputs())
    with pytest.raises(ValueError, match=r"lacks 2 tensors the model needs: "
                                         r"cls.seq_relationship.weight, cls.seq_relationship.bias"):
        checkpoint.build(head="pretrainer")


def test_hugging_face_export_then_import_round_trips_exactly(tmp_path):
    original = _checkpoints.random_pretrainer(seed=3)
    release = _checkpoints.write_tf1_release(original, tmp_path / "release")
    checkpoint = kbert.convert.read(release)
    checkpoint.build()  # the weights fit
    out = kbert.convert.hugging_face.write(checkpoint, tmp_path / "hf")
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json", "model.safetensors", "tokenizer_config.json", "vocab.txt"]
    again = kbert.convert.read(out)
    assert kbert.convert.detect_format(out) == "hf"
    assert again.config == checkpoint.config and again.vocabulary == checkpoint.vocabulary
    assert sorted(again.weights) == sorted(checkpoint.weights)
    for name, value in checkpoint.weights.items():
        assert np.array_equal(again.weights[name], value), name
    _checkpoints.assert_same_outputs(original, again.build(), _checkpoints.inputs())
    # From a kbert model: save_hugging_face, then back.
    kbert.convert.save_hugging_face(original.backbone, tmp_path / "hf_backbone",
                                    vocabulary=_checkpoints.VOCABULARY)
    backbone = kbert.convert.load(tmp_path / "hf_backbone")
    _checkpoints.assert_same_outputs(original.backbone, backbone, _checkpoints.inputs())
    with pytest.raises(FileExistsError, match="not empty"):
        kbert.convert.save_hugging_face(original, out)


def test_names_translate_like_the_original_code():
    assert tf1.tf1_name_to_hf("bert/encoder/layer_11/attention/self/query/kernel") == (
        "encoder.layer.11.attention.self.query.weight", True)
    assert tf1.tf1_name_to_hf("bert/embeddings/LayerNorm/gamma") == (
        "embeddings.LayerNorm.weight", False)
    assert tf1.tf1_name_to_hf("bert/embeddings/word_embeddings") == (
        "embeddings.word_embeddings.weight", False)
    assert tf1.tf1_name_to_hf("cls/predictions/output_bias") == ("cls.predictions.bias", False)
    assert tf1.tf1_name_to_hf("some/other/variable") is None


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        kbert.convert.read(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="not a checkpoint kbert can read"):
        kbert.convert.read(tmp_path / "empty")
    with pytest.raises(ValueError, match="Unknown format 'onnx'"):
        kbert.convert.read(tmp_path / "empty", format="onnx")
    original = _checkpoints.random_pretrainer()
    folder = _checkpoints.write_tf1_release(original, tmp_path / "release")
    (folder / "bert_config.json").rename(tmp_path / "elsewhere.json")
    with pytest.raises(FileNotFoundError, match="No bert_config.json next to"):
        kbert.convert.read(folder)
    checkpoint = kbert.convert.read(folder, config_path=tmp_path / "elsewhere.json")
    assert checkpoint.config == original.backbone.config
    with pytest.raises(ValueError, match="num_layers=3 would change the pretrained"):
        checkpoint.build(num_layers=3)
    with pytest.raises(ValueError, match="max_sequence_length=100: the checkpoint has 24"):
        checkpoint.build(max_sequence_length=100)
    short = checkpoint.build(head=None, max_sequence_length=12, dropout=0.2)
    assert short.config.max_sequence_length == 12 and short.config.dropout == 0.2


def test_models_of_no_kbert_family_are_refused(tmp_path):
    import keras

    inputs = keras.Input((4,))
    other = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    with pytest.raises(ValueError, match="not a kbert model of a known family"):
        kbert.convert.save_hugging_face(other, tmp_path / "other")
    assert not (tmp_path / "other").exists()
