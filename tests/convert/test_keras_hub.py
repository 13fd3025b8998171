"""keras-hub preset directories (config.json with registered_name, model.weights.h5, assets)."""

import keras_hub
import numpy as np
import pytest

import kbert.convert
from tests.convert import _checkpoints, _families


@pytest.mark.slow
def test_keras_hub_preset_imports_with_equal_outputs(tmp_path):
    keras_hub_backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(_checkpoints.VOCABULARY), num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=24, dropout=0.0)
    _checkpoints.randomise(keras_hub_backbone)
    keras_hub_backbone.save_to_preset(str(tmp_path / "preset"))
    keras_hub.models.BertTokenizer(vocabulary=_checkpoints.VOCABULARY, lowercase=True).save_to_preset(
        str(tmp_path / "preset"))
    assert kbert.convert.detect_format(tmp_path / "preset") == "keras_hub"
    checkpoint = kbert.convert.read(tmp_path / "preset")
    assert checkpoint.head is None and checkpoint.config.activation == "gelu_approximate"
    assert checkpoint.vocabulary == _checkpoints.VOCABULARY and checkpoint.lowercase
    backbone = checkpoint.build()
    x = _checkpoints.inputs()
    x = {k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(np.asarray(backbone(x)[key]),
                                   np.asarray(keras_hub_backbone(x)[key]), atol=1e-5, rtol=0)
    # keras-hub -> kbert -> Hugging Face format -> kbert: the same weights.
    kbert.convert.save_hugging_face(backbone, tmp_path / "hf", vocabulary=checkpoint.vocabulary)
    _checkpoints.assert_same_outputs(backbone, kbert.convert.load(tmp_path / "hf"), x)


SIZE = dict(num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
            max_sequence_length=24, dropout=0.0)


@pytest.mark.parametrize("family,make", [
    ("albert", lambda v: keras_hub.models.AlbertBackbone(
        vocabulary_size=v, embedding_dim=8, num_groups=2, **SIZE)),
    ("distil_bert", lambda v: keras_hub.models.DistilBertBackbone(vocabulary_size=v, **SIZE)),
    ("electra", lambda v: keras_hub.models.ElectraBackbone(vocab_size=v, embedding_dim=8,
                                                           **SIZE)),
])
@pytest.mark.slow
def test_other_families_import_with_equal_outputs(tmp_path, family, make):
    reference = make(len(_checkpoints.VOCABULARY))
    _checkpoints.randomise(reference)
    reference.save_to_preset(str(tmp_path / "preset"))
    spiece = (_families.FIXTURES / "albert" / "spiece.model").read_bytes()
    if family == "distil_bert":
        keras_hub.models.DistilBertTokenizer(
            vocabulary=_checkpoints.VOCABULARY, lowercase=True).save_to_preset(
            str(tmp_path / "preset"))
    elif family == "albert":
        keras_hub.models.AlbertTokenizer(proto=spiece).save_to_preset(str(tmp_path / "preset"))
    checkpoint = kbert.convert.read(tmp_path / "preset")
    assert checkpoint.family == family and checkpoint.head is None
    if family == "distil_bert":
        assert checkpoint.vocabulary == _checkpoints.VOCABULARY
    elif family == "albert":  # keras-hub keeps the SentencePiece model as vocabulary.spm
        assert checkpoint.sentencepiece_model == spiece and checkpoint.vocabulary is None
    backbone = checkpoint.build()
    x = {k: v for k, v in _checkpoints.inputs().items() if k in backbone.input}
    expected = reference(x)
    if not isinstance(expected, dict):  # keras-hub's DistilBertBackbone: the sequence alone
        expected = {"sequence_output": expected}
    got = backbone(x)
    assert set(got) == set(expected)
    for key in got:
        np.testing.assert_allclose(np.asarray(got[key]), np.asarray(expected[key]),
                                   atol=1e-5, rtol=0, err_msg=key)


def test_other_keras_hub_models_are_refused(tmp_path):
    keras_hub.models.GPT2Backbone(
        vocabulary_size=10, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
        max_sequence_length=8).save_to_preset(str(tmp_path / "gpt2"))
    with pytest.raises(ValueError, match="holds a keras-hub GPT2Backbone"):
        kbert.convert.read(tmp_path / "gpt2")
