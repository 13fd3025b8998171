"""Task distillation (`kbert.training.task_distillation.TaskDistiller`): its loss is Hinton et
al.'s, counted by hand; fitting on raw texts moves the student towards the frozen teacher and
leaves the teacher as it was; settings that cannot hold are refused by name."""

from pathlib import Path

import keras
import numpy as np
import pytest

import kbert
from kbert.training import pruning
from kbert.training.task_distillation import TaskDistiller

TASKS = Path(__file__).parents[1] / "fixtures" / "hf_tasks"
TEXTS = ["a good day", "the worst film", "fine", "not bad at all, really", "awful",
         "what a lovely story", "dull and long", "great fun"] * 4
LABELS = ["POSITIVE", "NEGATIVE", "NEUTRAL", "POSITIVE", "NEGATIVE", "POSITIVE",
          "NEGATIVE", "POSITIVE"] * 4


def _teacher():
    return kbert.load(str(TASKS / "bert_seq_single"), task="text-classification").model


def _student(teacher):
    teacher.compile()
    scores = pruning.importance(teacher, TEXTS, LABELS, batch_size=8, progress=False)
    heads, units = pruning.plan(scores, head_sparsity=0.5, unit_sparsity=0.5)
    return pruning.prune(teacher, heads=heads, units=units)


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_the_loss_is_the_labels_cross_entropy_and_the_tempered_kl_by_hand():
    teacher = _teacher()
    student = _student(teacher)
    distiller = TaskDistiller(student, teacher, temperature=3.0, alpha=0.25)
    features = teacher.preprocessor.encode(TEXTS[:8]).features
    x = {name: features[name] for name in teacher.input}
    labels = np.array([teacher.label_names.index(label) for label in LABELS[:8]])
    weights = np.array([1, 0, 2, 1, 1, 1, 0.5, 1], np.float32)
    y_pred = distiller(x)
    s = keras.ops.convert_to_numpy(student(x)).astype(np.float64)
    t = keras.ops.convert_to_numpy(teacher(x)).astype(np.float64)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(y_pred["teacher_logits"]), t,
                               atol=1e-6)
    ce = -_log_softmax(s)[np.arange(8), labels]
    p_t = np.exp(_log_softmax(t / 3))
    kl = (p_t * (_log_softmax(t / 3) - _log_softmax(s / 3))).sum(-1) * 9
    want = np.sum((0.25 * ce + 0.75 * kl) * weights) / weights.sum()
    got = float(distiller.compute_loss(x=x, y=labels, y_pred=y_pred, sample_weight=weights))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_fit_on_raw_texts_moves_the_student_to_the_frozen_teacher():
    teacher = _teacher()
    student = _student(teacher)
    teacher_weights = [w.copy() for w in teacher.get_weights()]
    flags = [v.trainable for v in teacher.variables]
    features = teacher.preprocessor.encode(TEXTS).features
    x = {name: features[name] for name in teacher.input}

    def kl():
        t = _log_softmax(keras.ops.convert_to_numpy(teacher(x)).astype(np.float64))
        s = _log_softmax(keras.ops.convert_to_numpy(student(x)).astype(np.float64))
        return float(np.mean((np.exp(t) * (t - s)).sum(-1)))

    before = kl()
    keras.utils.set_random_seed(0)
    distiller = TaskDistiller(student, teacher, alpha=0.0)
    distiller.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = distiller.fit(TEXTS, LABELS, batch_size=8, epochs=4, verbose=0)
    assert set(history.history) >= {"loss", "accuracy"}
    assert kl() < before / 2, (before, kl())
    assert teacher.trainable
    assert [v.trainable for v in teacher.variables] == flags  # as they were before
    for got, want in zip(teacher.get_weights(), teacher_weights):
        np.testing.assert_array_equal(got, want)  # the same variables, never trained
    # The student alone answers with what it learned: its own predict on the texts.
    np.testing.assert_allclose(student.predict(TEXTS[:8], verbose=0),
                               keras.ops.convert_to_numpy(student(
                                   {k: v[:8] for k, v in x.items()})), atol=1e-5)


def test_settings_that_cannot_hold_are_refused_by_name():
    teacher = _teacher()
    student = _student(teacher)
    with pytest.raises(ValueError, match="temperature=0.0: a positive finite number"):
        TaskDistiller(student, teacher, temperature=0.0)
    with pytest.raises(ValueError, match=r"alpha=1.5: the labels' share of the loss, in "
                                         r"\[0, 1\]"):
        TaskDistiller(student, teacher, alpha=1.5)
    with pytest.raises(ValueError, match="the same model"):
        TaskDistiller(teacher, teacher)
    with pytest.raises(ValueError, match="the teacher is a BertBackbone"):
        TaskDistiller(student, teacher.backbone)
    other = kbert.tasks.TextClassifier(teacher.backbone, label_names=["no", "yes"])
    with pytest.raises(ValueError, match=r"The student's classes \(2: \['no', 'yes'\]\) are "
                                         r"not the teacher's \(3"):
        TaskDistiller(other, teacher)
    regression = kbert.tasks.TextClassifier(teacher.backbone, problem_type="regression")
    with pytest.raises(ValueError, match="problem_type is 'regression'; allowed: "
                                         "'single_label'"):
        TaskDistiller(regression, teacher)
    distiller = TaskDistiller(student, teacher)
    distiller.compile(optimizer="adam")
    with pytest.raises(ValueError, match="TaskDistiller.fit on raw inputs shuffles and "
                                         "batches them itself: steps_per_epoch=2 is not taken"):
        distiller.fit(TEXTS, LABELS, steps_per_epoch=2)
    with pytest.raises(ValueError, match="sample_weight=array"):
        distiller.fit(TEXTS, LABELS, sample_weight=np.ones(len(TEXTS)))
    with pytest.raises(ValueError, match="temperature=inf: a positive finite number"):
        TaskDistiller(student, teacher, temperature=float("inf"))
    with pytest.raises(ValueError, match=r"alpha=-0.1: the labels' share of the loss, in "
                                         r"\[0, 1\]"):
        TaskDistiller(student, teacher, alpha=-0.1)
    with pytest.raises(ValueError, match="The student trains variables of the teacher"):
        TaskDistiller(kbert.tasks.TextClassifier(teacher.backbone,
                                                 label_names=teacher.label_names), teacher)
    small_vocabulary = kbert.tasks.TextClassifier(
        kbert.models.BertBackbone(vocabulary_size=20, num_layers=1, hidden_size=8,
                                  num_heads=2, intermediate_size=8, max_sequence_length=16),
        label_names=teacher.label_names)
    with pytest.raises(ValueError, match="The teacher reads the student's token ids: the "
                                         "student takes .* over 20 tokens"):
        TaskDistiller(small_vocabulary, teacher)


def test_a_mixed_precision_student_trains_with_loss_scaling():
    """Keras decides on loss scaling from the compiled model's own policy: the distiller's is
    its student's."""
    teacher = kbert.load(str(TASKS / "bert_seq_single"), task="text-classification",
                         dtype="mixed_float16").model
    student = _student(teacher)
    distiller = TaskDistiller(student, teacher)
    distiller.compile(optimizer="adam")
    assert distiller.dtype_policy.name == "mixed_float16"
    assert isinstance(distiller.optimizer, keras.optimizers.LossScaleOptimizer)
