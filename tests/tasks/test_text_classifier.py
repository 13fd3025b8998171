import keras
import numpy as np
import pytest
from scipy.special import erf

from kbert.tasks import ClassificationHead, TextClassifier
from tests.helpers import decayed_paths
from tests.tasks import _checks
from tests.tasks._checks import FAMILIES, inputs_for, numpy_outputs, tiny_backbone

LABELS = np.array([0, 2, 1, 2], "int32")


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.slow
def test_shapes_round_trips_and_train_step(family, tmp_path):
    model = TextClassifier(tiny_backbone(family), label_names=["neg", "neu", "pos"],
                           name=f"{family}_classifier")
    x = inputs_for(model)
    assert sorted(model.input) == sorted(model.backbone.input)
    assert numpy_outputs(model, x).shape == (4, 3)
    assert model.get_config()["label_names"] == ["neg", "neu", "pos"]
    _checks.check_round_trips(model, tmp_path)
    logs = _checks.check_train_step(model, x, LABELS)
    assert sorted(logs) == ["accuracy", "loss"]


def _np(w):
    return keras.ops.convert_to_numpy(w)


def _randomize_head(model):
    rng = np.random.default_rng(3)
    backbone_paths = {w.path for w in model.backbone.weights}
    for w in model.weights:
        if w.path not in backbone_paths:
            w.assign(rng.normal(scale=0.3, size=w.shape).astype("float32"))


@pytest.mark.parametrize("family", FAMILIES)
def test_head_is_transformers_head_layer_for_layer(family):
    """The logits recomputed in numpy from the backbone's outputs by transformers' formula of
    the family's *ForSequenceClassification (dropout is off at inference)."""
    model = TextClassifier(tiny_backbone(family), num_classes=3)
    _randomize_head(model)
    x = inputs_for(model)
    features = numpy_outputs(model.backbone, x)
    cls = features["sequence_output"][:, 0]
    names = [layer.name for layer in model.layers[len(model.input):]]
    if family in ("bert", "albert", "mobile_bert"):  # pooled output -> dropout -> classifier
        assert names[1:] == ["dropout", "classifier"] and model.head == "pooled"
        k, b = model.classifier.weights
        expected = features["pooled_output"] @ _np(k) + _np(b)
    elif family == "distil_bert":  # [CLS] -> pre_classifier + ReLU -> dropout -> classifier
        assert names[1:] == ["cls_token", "pre_classifier", "dropout", "classifier"]
        pk, pb = model.pre_classifier.weights
        k, b = model.classifier.weights
        expected = np.maximum(cls @ _np(pk) + _np(pb), 0) @ _np(k) + _np(b)
    elif family == "modern_bert":  # [CLS] -> dense -> GELU -> LayerNorm -> dropout -> classifier
        assert names[1:] == ["pooling", "prediction_head", "dropout", "classifier"]
        head = model.prediction_head
        h = cls @ _np(head.dense.kernel)  # no biases: the released configs'
        h = 0.5 * h * (1 + erf(h / np.sqrt(2)))
        h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5)
        k, b = model.classifier.weights
        expected = (h * _np(head.norm.gamma)) @ _np(k) + _np(b)
    else:  # Electra/RobertaClassificationHead (DeBERTa-v3: ContextPooler + classifier):
        # dense -> exact GELU (RoBERTa: tanh) -> out_proj
        assert names[1:] == ["classifier"] and isinstance(model.classifier, ClassificationHead)
        head = model.classifier
        h = cls @ _np(head.dense.kernel) + _np(head.dense.bias)
        h = np.tanh(h) if family == "roberta" else 0.5 * h * (1 + erf(h / np.sqrt(2)))
        expected = h @ _np(head.out_proj.kernel) + _np(head.out_proj.bias)
    np.testing.assert_allclose(numpy_outputs(model, x), expected, atol=1e-5, rtol=1e-5)


def test_default_dropout_is_transformers_per_family():
    rates = {family: TextClassifier(tiny_backbone(family), num_classes=2).dropout
             for family in FAMILIES}
    # BERT / ELECTRA / RoBERTa / MobileBERT: hidden_dropout_prob (MobileBERT's is 0); ALBERT:
    # classifier_dropout_prob (the backbone has none); DistilBERT: seq_classif_dropout;
    # DeBERTa-v3: hidden_dropout_prob (cls_dropout).
    assert rates == {"bert": 0.1, "albert": 0.1, "distil_bert": 0.2, "electra": 0.1,
                     "roberta": 0.1, "deberta_v3": 0.1, "mobile_bert": 0.0, "modern_bert": 0.0}
    model = TextClassifier(tiny_backbone("electra"), num_classes=2)
    assert model.classifier.dropout_layer.rate == 0.1
    assert TextClassifier(tiny_backbone("bert"), num_classes=2, dropout=0.3).get_layer(
        "dropout").rate == 0.3


def test_explicit_heads():
    cls = TextClassifier(tiny_backbone("bert"), num_classes=2, head="cls")
    assert cls.head == "cls" and isinstance(cls.classifier, ClassificationHead)
    pooled = TextClassifier(tiny_backbone("electra"), num_classes=2, head="pooled")
    assert pooled.head == "pooled" and not isinstance(pooled.classifier, ClassificationHead)
    with pytest.raises(ValueError, match="has no pooler: use head='cls'"):
        TextClassifier(tiny_backbone("distil_bert"), num_classes=2, head="pooled")
    with pytest.raises(ValueError, match="head='mean' is ModernBERT's mean pooling"):
        TextClassifier(tiny_backbone("bert"), num_classes=2, head="mean")
    with pytest.raises(ValueError, match="Unknown head 'max'"):
        TextClassifier(tiny_backbone("bert"), num_classes=2, head="max")


def test_text_pairs_read_the_segments():
    model = TextClassifier(tiny_backbone("bert"), num_classes=2)
    x = inputs_for(model)
    single = dict(x, segment_ids=np.zeros_like(x["segment_ids"]))
    assert not np.allclose(numpy_outputs(model, x), numpy_outputs(model, single))


@pytest.mark.slow
def test_multi_label_and_regression_train():
    x = inputs_for(tiny_backbone("bert"))
    multi = TextClassifier(tiny_backbone("bert"), num_classes=3, problem_type="multi_label")
    assert numpy_outputs(multi, x).shape == (4, 3)
    multi.compile()
    assert isinstance(multi.loss, keras.losses.BinaryCrossentropy) and multi.loss.from_logits
    hot = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1], [0, 1, 0]], "float32")
    _checks.check_train_step(multi, x, hot)

    regression = TextClassifier(tiny_backbone("bert"), problem_type="regression")
    assert regression.num_classes == 1 and numpy_outputs(regression, x).shape == (4, 1)
    regression.compile()
    assert isinstance(regression.loss, keras.losses.MeanSquaredError)
    logs = _checks.check_train_step(regression, x, np.array([0.5, 4.2, 3.0, 1.0], "float32"))
    assert sorted(logs) == ["loss", "mean_absolute_error"]


def test_an_unstated_problem_type_keeps_the_loss_and_round_trips(tmp_path):
    """problem_type_declared=False (a checkpoint without problem_type): the loss of the type
    transformers infers, `declared_problem_type` None, kept by get_config and .keras."""
    backbone = tiny_backbone("bert")
    model = TextClassifier(backbone, problem_type="regression", problem_type_declared=False,
                           name="unstated")
    assert (model.problem_type, model.declared_problem_type) == ("regression", None)
    restored = _checks.check_round_trips(model, tmp_path)
    assert isinstance(model.loss, keras.losses.MeanSquaredError)  # compiled by the check
    assert (restored.problem_type, restored.declared_problem_type) == ("regression", None)
    stated = TextClassifier(backbone, problem_type="regression")
    assert stated.declared_problem_type == "regression" and stated.problem_type_declared
    with pytest.raises(ValueError, match="problem_type_declared=False with 3 output\\(s\\) is "
                                         "problem_type='single_label'.*got 'multi_label'"):
        TextClassifier(backbone, num_classes=3, problem_type="multi_label",
                       problem_type_declared=False)


def test_argument_errors():
    backbone = tiny_backbone("bert")
    with pytest.raises(ValueError, match="regression' has one output; got num_classes=3"):
        TextClassifier(backbone, num_classes=3, problem_type="regression")
    with pytest.raises(ValueError, match="Unknown problem_type 'ranking'"):
        TextClassifier(backbone, num_classes=2, problem_type="ranking")
    with pytest.raises(ValueError, match="Give `num_classes`"):
        TextClassifier(backbone)
    with pytest.raises(ValueError, match="2 label_names for num_classes=3"):
        TextClassifier(backbone, num_classes=3, label_names=["a", "b"])
    with pytest.raises(ValueError, match="list of strings"):
        TextClassifier(backbone, num_classes=2, label_names=[0, 1])
    with pytest.raises(TypeError, match="needs a kbert backbone"):
        TextClassifier(keras.Sequential([keras.layers.Dense(2)]), num_classes=2)
    assert TextClassifier(backbone, label_names=["a", "b", "c"]).num_classes == 3


def test_compile_defaults_and_overrides():
    model = TextClassifier(tiny_backbone("bert"), num_classes=3)
    model.compile()
    optimizer = model.optimizer
    assert isinstance(optimizer, keras.optimizers.AdamW)
    assert np.isclose(float(optimizer.learning_rate), 2e-5) and optimizer.weight_decay == 0.01
    assert optimizer.global_clipnorm == 1.0 and optimizer.epsilon == 1e-6
    assert isinstance(model.loss, keras.losses.SparseCategoricalCrossentropy)
    # BERT decays no bias and no LayerNorm weight.
    decayed = decayed_paths(optimizer, model.trainable_variables)
    assert decayed and not any(p.endswith(("bias", "gamma", "beta")) for p in decayed)
    assert "classifier/kernel" in decayed

    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="categorical_hinge",
                  metrics=["categorical_accuracy"], run_eagerly=True)
    assert isinstance(model.optimizer, keras.optimizers.SGD) and model.loss == "categorical_hinge"
    logs = model.train_on_batch(inputs_for(model), np.eye(3, dtype="float32")[LABELS],
                                return_dict=True)
    assert sorted(logs) == ["categorical_accuracy", "loss"]


def test_mixed_bfloat16():
    model = TextClassifier(tiny_backbone("bert", dtype="mixed_bfloat16"), num_classes=2)
    assert model.dtype_policy.name == "mixed_bfloat16"
    assert all(keras.backend.standardize_dtype(w.dtype) == "float32" for w in model.weights)
    logits = model(inputs_for(model))
    assert keras.backend.standardize_dtype(logits.dtype) == "bfloat16"
