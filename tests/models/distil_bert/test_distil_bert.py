import keras_hub
import numpy as np
import pytest

import kbert
from kbert.models import DistilBertBackbone, DistilBertConfig, DistilBertPretrainer
from tests.helpers import TINY, random_batch
from tests.models import _family_checks


def test_no_segments_no_pooler():
    backbone = DistilBertBackbone(**TINY)
    assert sorted(backbone.input) == ["padding_mask", "token_ids"]
    out = _family_checks.numpy_outputs(backbone, _family_checks.inputs_for(backbone))
    assert list(out) == ["sequence_output"] and out["sequence_output"].shape == (4, 16, 32)
    assert backbone.embeddings.segment_embedding is None and backbone.pooler is None
    assert backbone.config.activation == "gelu"


def test_config_names():
    config = DistilBertConfig.from_dict({"vocab_size": 97, "n_layers": 2, "dim": 32,
                                         "n_heads": 4, "hidden_dim": 64})
    assert (config.num_layers, config.hidden_size, config.intermediate_size) == (2, 32, 64)


def test_config_and_keras_round_trip(tmp_path):
    _family_checks.check_config_and_keras_round_trip(DistilBertBackbone(**TINY), tmp_path)


def test_parity_with_keras_hub():
    reference = keras_hub.models.DistilBertBackbone(
        vocabulary_size=TINY["vocabulary_size"], num_layers=2, num_heads=4, hidden_dim=32,
        intermediate_dim=64, max_sequence_length=24)
    _family_checks.check_parity(reference, DistilBertBackbone(**TINY))  # exact GELU in both


@pytest.mark.slow
def test_pretrainer_is_mlm_only():
    model = DistilBertPretrainer(DistilBertBackbone(**TINY))
    model.compile(optimizer="adam")
    features, labels = random_batch()
    features = {k: v for k, v in features.items() if k in model.input}
    logs = model.train_on_batch(features, labels, return_dict=True)
    assert sorted(logs) == ["loss", "mlm_accuracy", "mlm_loss"] and np.isfinite(logs["loss"])
    with pytest.raises(ValueError, match="next_sentence_prediction must be False"):
        DistilBertPretrainer(DistilBertBackbone(**TINY), next_sentence_prediction=True)


@pytest.mark.slow
def test_preset():
    model = kbert.presets.load("distil_bert_base", weights=None)
    assert isinstance(model, DistilBertPretrainer) and not model.next_sentence_prediction
    assert model.backbone.count_params() == 66_362_880  # Hugging Face's distilbert-base-uncased
