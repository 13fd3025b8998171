"""TinyBertDistiller: the layer mapping, the states it reads, every loss term learns."""

import keras
import numpy as np
import pytest
from keras import ops

from kbert.models import BertBackbone, BertPretrainer, TinyBertDistiller
from kbert.models.distillation import backbone_states, tiny_bert_layers
from tests.helpers import TINY, random_batch

QUIET = {"dropout": 0.0, "attention_dropout": 0.0}
TERMS = ("embedding_loss", "attention_loss", "hidden_loss", "prediction_loss")


def pretrainer(**overrides):
    return BertPretrainer(BertBackbone(**{**TINY, **QUIET, **overrides}),
                          next_sentence_prediction=False)


def test_uniform_layer_mapping_is_tiny_berts():
    assert tiny_bert_layers(12, 4) == [2, 5, 8, 11]
    assert tiny_bert_layers(4, 2) == [1, 3]
    assert tiny_bert_layers(12, 6) == [1, 3, 5, 7, 9, 11]
    with pytest.raises(ValueError, match="A student of 5 layers cannot learn from a teacher "
                                         "of 4"):
        tiny_bert_layers(4, 5)


def test_backbone_states_end_in_the_sequence_output_and_give_scores_before_softmax():
    backbone = pretrainer(num_layers=3).backbone
    features, _ = random_batch()
    embeddings, hidden, scores = backbone_states(backbone, features)
    assert len(hidden) == len(scores) == 3
    assert tuple(embeddings.shape) == (4, 16, 32)
    assert tuple(scores[0].shape) == (4, 4, 16, 16)
    np.testing.assert_allclose(
        ops.convert_to_numpy(hidden[-1]),
        ops.convert_to_numpy(backbone({k: features[k] for k in backbone.input})
                             ["sequence_output"]), atol=1e-5)
    s = ops.convert_to_numpy(scores[0])
    mask = features["padding_mask"].astype(bool)
    assert (s[~np.broadcast_to(mask[:, None, None, :], s.shape)] < -1e8).all()
    real = s[np.broadcast_to(mask[:, None, None, :], s.shape)]
    assert np.abs(real).max() < 100 and (real < 0).any()  # logits, not probabilities


def distiller(stage="both"):
    keras.utils.set_random_seed(0)
    teacher = pretrainer(num_layers=4, hidden_size=32, intermediate_size=64)
    student = pretrainer(num_layers=2, hidden_size=16, intermediate_size=32)
    return TinyBertDistiller(student, teacher, stage=stage)


def evaluate(model, features, labels):
    return model.evaluate(features, labels, verbose=0, return_dict=True)


@pytest.mark.slow
def test_every_distillation_term_falls_below_its_value_at_initialisation():
    model = distiller()
    assert model.teacher_layers == [1, 3]
    assert len(model.projections) == 3  # embeddings and each student layer: 16 -> 32
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    features, labels = random_batch(batch=8)
    teacher_before = [ops.convert_to_numpy(w) for w in model.teacher.weights]
    before = evaluate(model, features, labels)
    assert all(before[t] > 0 for t in TERMS), before
    model.fit(features, labels, epochs=40, batch_size=8, verbose=0)
    after = evaluate(model, features, labels)
    # The soft cross-entropy cannot go below the teacher's entropy: its excess (the KL) falls.
    teacher = ops.convert_to_numpy(ops.softmax(model(features)["teacher_logits"]))
    weights = labels["mask_weights"]
    entropy = (-(teacher * np.log(teacher)).sum(-1) * weights).sum() / weights.sum()
    before["prediction_loss"] -= entropy
    after["prediction_loss"] -= entropy
    for term in TERMS:
        assert 0 <= after[term] < 0.7 * before[term], (term, before, after)
    for w, b in zip(model.teacher.weights, teacher_before):
        np.testing.assert_array_equal(ops.convert_to_numpy(w), b)


@pytest.mark.parametrize("stage,off", [("intermediate", ["prediction_loss"]),
                                       ("prediction", TERMS[:3])])
def test_a_stage_trains_its_own_terms_only(stage, off):
    model = distiller(stage)
    model.compile(optimizer="adam")
    features, labels = random_batch(batch=8)
    logs = evaluate(model, features, labels)
    for term in TERMS:
        assert (logs[term] == 0) == (term in off), (stage, logs)
    assert logs["loss"] == pytest.approx(sum(logs[t] for t in TERMS), rel=1e-4)


def test_bad_settings_are_refused():
    teacher = pretrainer(num_layers=4)
    with pytest.raises(ValueError, match="stage='all': one of intermediate, prediction, both"):
        TinyBertDistiller(pretrainer(), teacher, stage="all")
    with pytest.raises(ValueError, match="compares heads one to one, the same in every layer: "
                                         "the student has 2, the teacher 4"):
        TinyBertDistiller(pretrainer(num_heads=2), teacher)
    # A pruned student (per-layer heads): the same refusal, its heads named per layer.
    with pytest.raises(ValueError, match=r"one to one, the same in every layer: the student "
                                         r"has \(2, 4\)"):
        TinyBertDistiller(pretrainer(layer_heads=[2, 4]), teacher)
    with pytest.raises(ValueError, match=r"teacher_layers=\[0\]: need 2 teacher layers"):
        TinyBertDistiller(pretrainer(), teacher, teacher_layers=[0])
