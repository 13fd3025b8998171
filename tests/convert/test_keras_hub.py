"""keras-hub preset directories (config.json with registered_name, model.weights.h5, assets)."""

import keras_hub
import numpy as np
import pytest

import kbert.convert
from tests.convert import _checkpoints


def test_keras_hub_preset_imports_with_equal_outputs(tmp_path):
    keras_hub_backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(_checkpoints.VOCABULARY), num_layers=2, num_heads=2, hidden_dim=16,
        intermediate_dim=32, max_sequence_length=24, dropout=0.0)
    rng = np.random.default_rng(0)
    for variable in keras_hub_backbone.weights:
        variable.assign(rng.normal(0.0, 0.2, variable.shape).astype("float32"))
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


def test_other_keras_hub_models_are_refused(tmp_path):
    keras_hub.models.DistilBertBackbone(
        vocabulary_size=10, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16,
        max_sequence_length=8).save_to_preset(str(tmp_path / "distil"))
    with pytest.raises(ValueError, match="holds a keras-hub DistilBertBackbone"):
        kbert.convert.read(tmp_path / "distil")
