import keras
import numpy as np
import pytest

from kbert.tasks.question_answering.model import QuestionAnswerer, SpanLogits
from tests.tasks import _checks
from tests.tasks._checks import FAMILIES, inputs_for, numpy_outputs, tiny_backbone

STARTS = np.array([1, 5, 3, 0], "int32")  # 0: [CLS], SQuAD v2's "no answer"
ENDS = np.array([2, 6, 3, 0], "int32")


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.slow
def test_shapes_round_trips_and_train_step(family, tmp_path):
    model = QuestionAnswerer(tiny_backbone(family), name=f"{family}_qa")
    x = inputs_for(model)
    out = numpy_outputs(model, x)
    assert sorted(out) == ["end_logits", "start_logits"]
    assert all(v.shape == (4, 16) and v.dtype == np.float32 for v in out.values())
    _checks.check_round_trips(model, tmp_path)
    logs = _checks.check_train_step(
        model, x, {"start_positions": STARTS, "end_positions": ENDS},
        head_weight=model.qa_outputs.kernel)
    assert sorted(logs) == ["end_logits_accuracy", "end_logits_loss", "loss",
                            "start_logits_accuracy", "start_logits_loss"]


def test_padded_positions_never_win():
    model = QuestionAnswerer(tiny_backbone("bert"))
    x = inputs_for(model)
    mask = x["padding_mask"].astype(bool)
    sequence = numpy_outputs(model.backbone, x)["sequence_output"]
    # A head that prefers the padding: the kernel points from the real tokens' mean hidden
    # state to the padded ones'.
    direction = sequence[~mask].mean(0) - sequence[mask].mean(0)
    kernel = np.stack([direction, direction], axis=1) * 100.0
    model.qa_outputs.kernel.assign(kernel.astype("float32"))
    unmasked = sequence @ kernel
    assert not mask[np.arange(4), unmasked[..., 0].argmax(1)].all()  # the head alone would
    out = numpy_outputs(model, x)
    for name in ("start_logits", "end_logits"):
        assert mask[np.arange(4), out[name].argmax(1)].all()
        assert (out[name][~mask] == -1e9).all()
        np.testing.assert_allclose(out[name][mask], unmasked[..., 0][mask], rtol=1e-4,
                                   atol=1e-2)


def test_span_logits_layer():
    logits = np.array([[[1.0, 2.0], [5.0, 6.0], [9.0, 9.0]]], "float32")  # [1, 3, 2]
    start, end = SpanLogits()(logits, np.array([[1, 1, 0]]))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(start), [[1.0, 5.0, -1e9]])
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(end), [[2.0, 6.0, -1e9]])


def _cross_entropy(logits, labels):
    logits = logits.astype("float64") - logits.max(-1, keepdims=True)
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -log_p[np.arange(len(labels)), labels]


def test_loss_is_the_mean_of_start_and_end_over_the_real_tokens():
    model = QuestionAnswerer(tiny_backbone("bert"))
    model.compile(run_eagerly=True)
    x = inputs_for(model)
    logs = model.evaluate(x, (STARTS, ENDS), return_dict=True, verbose=0)
    out = numpy_outputs(model, x)
    mask = x["padding_mask"].astype(bool)
    # Cross-entropy over the real tokens only: the padding takes no softmax mass.
    start = [_cross_entropy(out["start_logits"][i][mask[i]][None], STARTS[i:i + 1])[0]
             for i in range(4)]
    end = [_cross_entropy(out["end_logits"][i][mask[i]][None], ENDS[i:i + 1])[0]
           for i in range(4)]
    np.testing.assert_allclose(logs["loss"], 0.5 * (np.mean(start) + np.mean(end)), rtol=1e-5)
    np.testing.assert_allclose(logs["start_logits_loss"], np.mean(start), rtol=1e-5)
    # The same labels as a dict in transformers' names or in the output names.
    for labels in ({"start_positions": STARTS, "end_positions": ENDS},
                   {"start_logits": STARTS[:, None], "end_logits": ENDS[:, None]}):
        again = model.evaluate(x, labels, return_dict=True, verbose=0)
        np.testing.assert_allclose(again["loss"], logs["loss"], rtol=1e-6)
    with pytest.raises(ValueError, match="needs labels"):
        model.evaluate(x, {"start": STARTS, "end": ENDS}, verbose=0)


def test_dropout_and_layers_per_family():
    rates = {family: QuestionAnswerer(tiny_backbone(family)).dropout for family in FAMILIES}
    # Only DistilBERT's QA model has a dropout (qa_dropout) before qa_outputs.
    assert rates == {"bert": 0.0, "albert": 0.0, "distil_bert": 0.1, "electra": 0.0,
                     "roberta": 0.0, "deberta_v3": 0.0, "mobile_bert": 0.0,
                     "modern_bert": 0.0}
    model = QuestionAnswerer(tiny_backbone("bert"))
    names = [layer.name for layer in model.layers[len(model.input):]]
    assert names[1:] == ["dropout", "qa_outputs", "span_logits"]
    assert model.qa_outputs.kernel.shape == (32, 2)
