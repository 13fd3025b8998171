import keras
import numpy as np
import pytest

from kbert.tasks import TokenClassifier
from tests.tasks import _checks
from tests.tasks._checks import FAMILIES, inputs_for, numpy_outputs, tiny_backbone

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def first_piece_weights(padding_mask, seed=0):
    """1 on the first wordpiece of each word (here: a random share of the real tokens), 0 on
    the other pieces and the padding."""
    rng = np.random.default_rng(seed)
    weights = (rng.random(padding_mask.shape) < 0.6) * padding_mask
    weights[:, 0] = 0  # [CLS]
    return weights.astype("float32")


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.slow
def test_shapes_round_trips_and_train_step(family, tmp_path):
    model = TokenClassifier(tiny_backbone(family), label_names=TAGS, name=f"{family}_tagger")
    x = inputs_for(model)
    assert model.num_classes == 5 and numpy_outputs(model, x).shape == (4, 16, 5)
    _checks.check_round_trips(model, tmp_path)
    labels = np.random.default_rng(1).integers(0, 5, (4, 16)).astype("int32")
    logs = _checks.check_train_step(model, x, labels,
                                    sample_weight=first_piece_weights(x["padding_mask"]))
    assert sorted(logs) == ["accuracy", "loss"]


def _log_softmax(logits):
    logits = logits - logits.max(-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def test_loss_and_accuracy_ignore_weight_zero_positions():
    model = TokenClassifier(tiny_backbone("bert"), num_classes=5)
    model.compile(run_eagerly=True)
    x = inputs_for(model)
    weights = first_piece_weights(x["padding_mask"])
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 5, (4, 16)).astype("int32")
    # Other labels at every weight-0 position: the loss must not move.
    other = np.where(weights > 0, labels, (labels + rng.integers(1, 5, labels.shape)) % 5)
    assert (other != labels).sum() > 20
    a = model.evaluate(x, labels, sample_weight=weights, return_dict=True, verbose=0)
    b = model.evaluate(x, other, sample_weight=weights, return_dict=True, verbose=0)
    np.testing.assert_allclose(a["loss"], b["loss"], rtol=1e-6)
    assert a["accuracy"] == b["accuracy"]
    # The mean over the weighted tokens, not over B * S.
    log_p = _log_softmax(numpy_outputs(model, x).astype("float64"))
    ce = -np.take_along_axis(log_p, labels[..., None], -1)[..., 0]
    np.testing.assert_allclose(a["loss"], (ce * weights).sum() / weights.sum(), rtol=1e-5)
    correct = numpy_outputs(model, x).argmax(-1) == labels
    np.testing.assert_allclose(a["accuracy"], (correct * weights).sum() / weights.sum(),
                               rtol=1e-6)


def test_without_weights_the_padding_is_ignored():
    model = TokenClassifier(tiny_backbone("bert"), num_classes=5)
    model.compile(run_eagerly=True)
    x = inputs_for(model)
    mask = x["padding_mask"].astype(bool)
    assert (~mask).sum() > 5
    labels = np.random.default_rng(3).integers(0, 5, (4, 16)).astype("int32")
    garbage = np.where(mask, labels, 4 - labels)
    a = model.evaluate(x, labels, return_dict=True, verbose=0)
    b = model.evaluate(x, garbage, return_dict=True, verbose=0)
    np.testing.assert_allclose(a["loss"], b["loss"], rtol=1e-6)
    log_p = _log_softmax(numpy_outputs(model, x).astype("float64"))
    ce = -np.take_along_axis(log_p, labels[..., None], -1)[..., 0]
    np.testing.assert_allclose(a["loss"], ce[mask].mean(), rtol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_head_is_dropout_then_classifier(family):
    model = TokenClassifier(tiny_backbone(family), num_classes=3)
    names = [layer.name for layer in model.layers[len(model.input):]]
    # ModernBERT's prediction head (dense + activation + LayerNorm) comes first.
    head = ["prediction_head"] if family == "modern_bert" else []
    assert names[1:] == head + ["dropout", "classifier"]
    # transformers: classifier_dropout / hidden_dropout_prob; ALBERT's classifier_dropout_prob
    # (0.1; its backbone has no dropout); DistilBERT's dropout; MobileBERT's hidden dropout
    # is 0, as ModernBERT's classifier_dropout.
    assert model.dropout == (0.0 if family in ("mobile_bert", "modern_bert") else 0.1)
    x = inputs_for(model)
    rng = np.random.default_rng(4)
    kernel, bias = model.classifier.weights
    bias.assign(rng.normal(size=bias.shape).astype("float32"))
    sequence = numpy_outputs(model.backbone, x)["sequence_output"]
    if head:  # the layer test_text_classifier.py recomputes in numpy
        sequence = keras.ops.convert_to_numpy(model.prediction_head(sequence))
    expected = sequence @ keras.ops.convert_to_numpy(kernel) + keras.ops.convert_to_numpy(bias)
    np.testing.assert_allclose(numpy_outputs(model, x), expected, atol=1e-5)


def test_argument_errors():
    with pytest.raises(ValueError, match="Give `num_classes`"):
        TokenClassifier(tiny_backbone("bert"))
    with pytest.raises(ValueError, match="5 label_names for num_classes=4"):
        TokenClassifier(tiny_backbone("bert"), num_classes=4, label_names=TAGS)
