"""Distiller and initialize_student: the loss terms, a frozen teacher, the student's start."""

import keras
import numpy as np
import pytest
from keras import ops

from kbert.models import (
    BertBackbone, BertPretrainer, DistilBertBackbone, DistilBertPretrainer, Distiller,
    initialize_student,
)
from kbert.models.distillation import student_layers
from tests.helpers import TINY, random_batch
from tests.models._family_checks import randomize

QUIET = {"dropout": 0.0, "attention_dropout": 0.0}


def teacher(num_layers=4, **overrides):
    return BertPretrainer(BertBackbone(**{**TINY, **QUIET, "num_layers": num_layers,
                                          **overrides}), next_sentence_prediction=False)


def student(**overrides):
    return DistilBertPretrainer(DistilBertBackbone(**{**TINY, **QUIET, **overrides}))


def numpy(x):
    return ops.convert_to_numpy(x)


def test_default_layers_are_distilberts():
    assert student_layers(12, 6) == [0, 2, 4, 7, 9, 11]
    assert student_layers(4, 2) == [0, 3]
    with pytest.raises(ValueError, match="A student of 5 layers cannot take its layers from a "
                                         "teacher of 4"):
        student_layers(4, 5)


def test_a_student_with_every_teacher_layer_is_the_teacher():
    big = teacher(num_layers=2)
    randomize(big)
    copy = teacher(num_layers=2)
    assert initialize_student(copy, big) == [0, 1]
    features, _ = random_batch()
    np.testing.assert_array_equal(numpy(copy(features)["mlm_logits"]),
                                  numpy(big(features)["mlm_logits"]))


def test_distil_bert_student_takes_the_chosen_layers():
    big = teacher(num_layers=4)
    randomize(big)
    small = student()
    assert initialize_student(small, big, layers=[1, 3]) == [1, 3]
    for j, i in enumerate([1, 3]):
        for s, t in zip(small.backbone.transformer_layers[j].weights,
                        big.backbone.transformer_layers[i].weights):
            np.testing.assert_array_equal(numpy(s), numpy(t))
    np.testing.assert_array_equal(numpy(small.backbone.token_embedding.embeddings),
                                  numpy(big.backbone.token_embedding.embeddings))
    np.testing.assert_array_equal(numpy(small.mlm_head.output_bias),
                                  numpy(big.mlm_head.output_bias))


@pytest.mark.slow
def test_incompatible_students_are_refused():
    with pytest.raises(ValueError, match="hidden_size 16 vs 32"):
        initialize_student(student(hidden_size=16, intermediate_size=32), teacher())
    with pytest.raises(ValueError, match=r"layers=\[0, 9\]: need 2 teacher layers, each in "
                                         r"\[0, 4\)"):
        initialize_student(student(), teacher(), layers=[0, 9])
    with pytest.raises(ValueError, match="The cosine loss compares hidden states"):
        Distiller(student(hidden_size=16, intermediate_size=32), teacher())
    with pytest.raises(ValueError, match="The teacher must be a pretrainer with a masked-LM"):
        Distiller(student(), BertBackbone(**TINY))


@pytest.mark.slow
def test_loss_terms_match_numpy():
    big, small = teacher(), student()
    randomize(big, seed=1)
    model = Distiller(small, big, temperature=2.0, kl_weight=5.0, mlm_weight=2.0,
                      cosine_weight=1.0)
    features, labels = random_batch()
    outputs = model(features)
    loss = float(model.compute_loss(x=features, y=labels, y_pred=outputs))

    def log_softmax(z):
        z = z - z.max(-1, keepdims=True)
        return z - np.log(np.exp(z).sum(-1, keepdims=True))

    w = labels["mask_weights"]
    s, t = log_softmax(numpy(outputs["mlm_logits"]) / 2), log_softmax(
        numpy(outputs["teacher_logits"]) / 2)
    kl = ((np.exp(t) * (t - s)).sum(-1) * w).sum() / w.sum() * 4
    np.testing.assert_allclose(float(model.kl_loss_tracker.result()), kl, rtol=1e-4)
    a, b = numpy(outputs["sequence_output"]), numpy(outputs["teacher_sequence_output"])
    cos = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    mask = features["padding_mask"]
    cosine = ((1 - cos) * mask).sum() / mask.sum()
    np.testing.assert_allclose(float(model.cosine_loss_tracker.result()), cosine, rtol=1e-4)
    mlm = float(model.mlm_loss_tracker.result())
    np.testing.assert_allclose(loss, 5 * kl + 2 * mlm + cosine, rtol=1e-4)
    # The teacher's own logits, in inference mode.
    np.testing.assert_allclose(numpy(outputs["teacher_logits"]),
                               numpy(big(features, training=False)["mlm_logits"]), atol=1e-5)


@pytest.mark.slow
def test_the_kl_to_the_teacher_falls_and_the_teacher_is_frozen():
    big = teacher(dropout=0.5)  # dropout would show if the teacher ran in training mode
    randomize(big, seed=2)
    model = Distiller(student(), big, kl_weight=1.0, mlm_weight=0.0, cosine_weight=0.0)
    features, labels = random_batch(batch=8, seed=4)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    before = [numpy(w).copy() for w in big.weights]
    assert not model.teacher.trainable and len(model.trainable_weights) == len(
        model.student.trainable_weights)
    first = model.train_on_batch(features, labels, return_dict=True)
    for _ in range(40):
        logs = model.train_on_batch(features, labels, return_dict=True)
    # Seen: 0.556 -> 0.046.
    assert logs["kl_loss"] < 0.5 * first["kl_loss"], (first, logs)
    for w, value in zip(big.weights, before):
        np.testing.assert_array_equal(numpy(w), value, err_msg=w.path)
    a = numpy(model(features, training=True)["teacher_logits"])
    b = numpy(model(features, training=True)["teacher_logits"])
    np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_config_round_trip():
    model = Distiller(student(), teacher(), temperature=3.0, cosine_weight=0.5)
    config = model.get_config()
    restored = Distiller.from_config(config)
    assert restored.get_config() == config
    assert restored.feature_names == ["mask_positions", "padding_mask", "segment_ids",
                                      "token_ids"]
