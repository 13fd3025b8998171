import keras
import keras_hub
import numpy as np
import pytest

import kbert
from kbert.models import DebertaV3Backbone, DebertaV3Config, DebertaV3Pretrainer
from kbert.models.deberta_v3.disentangled_attention_encoder import relative_position_indexes
from tests.helpers import TINY, random_batch, shapes_only
from tests.models import _family_checks

# 4 buckets: distances beyond +-2 are log-bucketed within the 16-token test batch.
DEBERTA = dict(TINY, position_buckets=4)


def test_shapes_and_inputs():
    backbone = DebertaV3Backbone(**DEBERTA)
    assert sorted(backbone.input) == ["padding_mask", "token_ids"]
    out = _family_checks.numpy_outputs(backbone, _family_checks.inputs_for(backbone))
    assert list(out) == ["sequence_output"] and out["sequence_output"].shape == (4, 16, 32)
    assert tuple(backbone.relative_embedding.embeddings.shape) == (8, 32)


def test_config_validation():
    with pytest.raises(ValueError, match="no segment embeddings"):
        DebertaV3Config(**TINY, type_vocab_size=2)
    with pytest.raises(ValueError, match="position_buckets must be at least 2"):
        DebertaV3Config(**TINY, position_buckets=1)
    with pytest.raises(ValueError, match="attention_types"):
        DebertaV3Config(**TINY, attention_types=("c2c",))
    config = DebertaV3Config.from_dict({**TINY, "pos_att_type": ["p2c", "c2p"]})
    assert config.attention_types == ("c2p", "p2c")
    assert config.max_relative_distance == 24  # max_sequence_length when not given


def test_relative_positions_bucket_as_transformers():
    # transformers 4.57's make_log_bucket_position(rel, 8, 24) + 8, clamped to [0, 15], for
    # rel = i - j = 0, 1, 3, 4, 5, 10, 23, -5, -23 (printed by it; by its formula: |rel| <= 4
    # keeps rel, else ceil(log(|rel|/4) / log(23/4) * 3) + 4, with the sign).
    index = keras.ops.convert_to_numpy(relative_position_indexes(24, 8, 24))
    rel = {0: 8, 1: 9, 3: 11, 4: 12, 5: 13, 10: 14, 23: 15, -5: 3, -23: 1}
    for distance, expected in rel.items():
        i, j = (distance, 0) if distance >= 0 else (0, -distance)
        assert index[i, j] == expected, (distance, index[i, j], expected)


def test_config_and_keras_round_trip(tmp_path):
    _family_checks.check_config_and_keras_round_trip(DebertaV3Backbone(**DEBERTA), tmp_path)


@pytest.mark.parametrize("buckets", [4, 16])
def test_parity_with_keras_hub(buckets):
    reference = keras_hub.models.DebertaV3Backbone(
        vocabulary_size=TINY["vocabulary_size"], num_layers=2, num_heads=4, hidden_dim=32,
        intermediate_dim=64, max_sequence_length=24, bucket_size=buckets)
    _family_checks.check_parity(reference, DebertaV3Backbone(**dict(TINY,
                                                                   position_buckets=buckets)))


@pytest.mark.parametrize("name,expected", [
    ("deberta_v3_xsmall", 70_682_112), ("deberta_v3_small", 141_304_320),
    ("deberta_v3_base", 183_831_552), ("deberta_v3_large", 434_012_160)])
def test_preset_parameter_counts(name, expected):
    """Equal to transformers' DebertaV2Model of the microsoft/deberta-v3-* configs (counted
    with transformers 4.57 from configs written out by hand)."""
    backbone = shapes_only(lambda: kbert.presets.load(name, head=None, weights=None))
    assert isinstance(backbone, DebertaV3Backbone)
    assert backbone.count_params() == expected


@pytest.mark.slow
def test_mlm_pretrainer_ties_its_head_and_trains():
    model = DebertaV3Pretrainer(DebertaV3Backbone(**DEBERTA))
    assert not model.next_sentence_prediction
    assert model.mlm_head.token_embedding is model.backbone.token_embedding
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    features, labels = random_batch()
    features = {k: features[k] for k in model.input}
    first = model.train_on_batch(features, labels, return_dict=True)
    for _ in range(4):
        last = model.train_on_batch(features, labels, return_dict=True)
    assert {"mlm_loss", "mlm_accuracy"} <= set(first)
    assert last["mlm_loss"] < first["mlm_loss"]


def test_mixed_bfloat16_forward():
    backbone = kbert.models.build("deberta_v3", DebertaV3Config(**DEBERTA), head=None,
                                  dtype="mixed_bfloat16")
    out = backbone(_family_checks.inputs_for(backbone))["sequence_output"]
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
    assert backbone.embeddings.token_embedding.embeddings.dtype == "float32"
    assert np.isfinite(keras.ops.convert_to_numpy(keras.ops.cast(out, "float32"))).all()
