"""Pruning a fine-tuned task model on its data (`kbert.training.pruning`): importance is the
loss's first-order change when a head's or unit's output is gated (checked against finite
differences of the loss), the plan removes the lowest-scored parts across layers, and the
pruned task model answers as the full one with those parts masked, saved, reloaded and in a
pipeline, on TensorFlow, on ONNX Runtime and in TFLite; a layer's importance is the loss
without it."""

from pathlib import Path

import keras
import numpy as np
import pytest

import kbert
from kbert.models import pruning as backbone_pruning
from kbert.training import pruning

TASKS = Path(__file__).parents[1] / "fixtures" / "hf_tasks"
IDS = np.array([[2, 5, 9, 11, 14, 3, 0], [2, 7, 8, 21, 4, 6, 3], [2, 30, 31, 3, 0, 0, 0],
                [2, 12, 13, 15, 16, 3, 0]], np.int32)
LABELS = np.array([0, 1, 1, 0], np.int32)


def _model(family="bert"):
    model = kbert.load(str(TASKS / f"{family}_seq_single")).model
    model.compile()
    return model


def _features(model=None):
    x = {"token_ids": IDS, "padding_mask": (IDS > 0).astype(np.int32)}
    if model is None or "segment_ids" in model.backbone.input:
        x["segment_ids"] = np.zeros_like(IDS)
    return x


def _loss(model, x):
    return float(model.compute_loss(x=x, y=LABELS, y_pred=model(x)))


def _gated(model, kernel, row, gate):
    """`model` with `kernel`'s slice `row` (a head's or a unit's output rows) scaled."""
    values = kernel.numpy()
    values[row] *= gate
    kernel.assign(values)


@pytest.mark.parametrize("family", ["bert", pytest.param("albert", marks=pytest.mark.slow),
                                    pytest.param("mobile_bert", marks=pytest.mark.slow),
                                    pytest.param("modern_bert", marks=pytest.mark.slow)])
def test_importance_is_the_loss_change_of_a_gate(family):
    """Each head's and unit's score against finite differences of the loss with its output
    rows scaled (ALBERT's: in the block every layer runs; MobileBERT's units: in each of its
    feed-forward networks; ModernBERT's and MobileBERT's heads: runs of head_size rows)."""
    model = _model(family)
    x = _features(model)
    scores = pruning.importance(model, x, LABELS, batch_size=len(IDS), progress=False)
    assert scores.batches == 1
    eps = 1e-2
    for layer, block in enumerate(model.backbone.transformer_layers):
        layout = block.pruning_layout()
        kernels = {key: w for key, w in backbone_pruning._weights(block).items()}
        for kind in ("heads", "units"):
            derivative = []
            for index in range(layout.count(kind)):
                loss = {}
                for gate in (1 + eps, 1 - eps):
                    originals = {}
                    for key in layout.outputs[kind]:
                        originals[key] = kernels[key].numpy().copy()
                        _gated(model, kernels[key], layout.positions(key, [index]), gate)
                    loss[gate] = _loss(model, x)
                    for key, value in originals.items():
                        kernels[key].assign(value)
                derivative.append(abs(loss[1 + eps] - loss[1 - eps]) / (2 * eps))
            want = np.array(derivative) / np.linalg.norm(derivative)
            got = getattr(scores, kind)[layer]
            np.testing.assert_allclose(got, want, atol=2e-3, err_msg=f"{kind} of {layer}")
            assert np.isclose(np.linalg.norm(got), 1.0)


def test_importance_reads_raw_text_through_the_preprocessor():
    model = kbert.load(str(TASKS / "bert_seq_single"), task="text-classification").model
    model.compile()
    texts = ["a good day", "the worst film", "fine", "not bad at all, really"]
    scores = pruning.importance(model, texts, [0, 1, 1, 0], batch_size=2, progress=False,
                                steps=1)
    assert scores.batches == 1 and [len(h) for h in scores.heads] == [2, 2]
    with pytest.raises(ValueError, match="steps=0: a positive number of batches"):
        pruning.importance(model, texts, [0, 1, 1, 0], steps=0, progress=False)
    with pytest.raises(ValueError, match="not compiled"):
        pruning.importance(kbert.load(str(TASKS / "bert_seq_single")).model, texts,
                           [0, 1, 1, 0], progress=False)


def _cross_entropy(logits, labels):
    logits = np.asarray(logits, np.float64)
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -np.mean(log_p[np.arange(len(labels)), labels])


def test_layer_importance_is_the_loss_without_each_layer():
    """A layer's score is the cross-entropy (by hand, in NumPy) of the model without it
    minus the full model's, on two batches; the plan takes the lowest."""
    model = _model()
    x = _features()
    scores = pruning.layer_importance(model, x, LABELS, batch_size=2, progress=False)
    halves = [slice(0, 2), slice(2, 4)]

    def by_hand(candidate):  # the mean of the two batches' mean losses, as Keras's
        return np.mean([_cross_entropy(keras.ops.convert_to_numpy(candidate(
            {k: v[part] for k, v in x.items()})), LABELS[part]) for part in halves])

    full = by_hand(model)
    want = [by_hand(pruning.prune(model, layers=[i])) - full for i in range(2)]
    np.testing.assert_allclose(scores, want, atol=1e-5)
    assert abs(want[0] - want[1]) > 1e-3  # the two layers differ: the order means something
    assert pruning.plan_layers(scores, 1) == [int(np.argmin(want))]
    assert pruning.plan_layers(scores, 0) == []
    for bad in (2, -1, 0.5, True):
        with pytest.raises(ValueError, match=rf"count={bad!r}: the number of layers to "
                                             r"remove, 0 to 1 of the 2"):
            pruning.plan_layers(scores, bad)
    with pytest.raises(ValueError, match="steps=0"):
        pruning.layer_importance(model, x, LABELS, steps=0, progress=False)


def test_the_plan_removes_the_lowest_scores_across_layers():
    scores = pruning.Importance(heads=[np.array([0.9, 0.1, 0.2, 0.3]), np.array([0.05, 0.06,
                                                                                0.04, 0.99])],
                                units=[np.array([0.5, 0.4]), np.array([0.1, 0.2])], batches=1)
    heads, units = pruning.plan(scores, head_sparsity=0.5)
    assert heads == {0: [1], 1: [0, 1, 2]}  # 0.04, 0.05, 0.06, then 0.1
    assert units == {}
    # Every head but each layer's best: 6 of 8 at most, whatever the sparsity.
    heads, units = pruning.plan(scores, head_sparsity=0.99, unit_sparsity=0.5)
    assert heads == {0: [1, 2, 3], 1: [0, 1, 2]} and units == {0: [1], 1: [0]}
    for bad in (1.0, -0.1, "half", True):
        with pytest.raises(ValueError, match=r"head_sparsity=.*a fraction in \[0, 1\)"):
            pruning.plan(scores, head_sparsity=bad)
    # A MobileBERT block's units are several feed-forward networks': each keeps its best.
    stacked = pruning.Importance(heads=[np.array([0.5, 0.6])],
                                 units=[np.array([0.9, 0.8, 0.7, 0.01, 0.03, 0.02])],
                                 batches=1, unit_runs=[[3, 3]])
    assert pruning.plan(stacked, unit_sparsity=0.99)[1] == {0: [1, 2, 3, 5]}


def test_layer_importance_refuses_what_cannot_lose_one_layer():
    """ALBERT with 2 groups of 2 layers: one layer removed leaves its blocks unequal."""
    from kbert.models import AlbertBackbone, AlbertConfig
    from kbert.tasks import TextClassifier

    backbone = AlbertBackbone.from_config(AlbertConfig(40, 4, 8, 2, 16, num_groups=2).to_dict())
    model = TextClassifier(backbone, num_classes=2)
    model.compile()
    with pytest.raises(ValueError, match=r"removes one layer at a time, which this model "
                                         r"cannot: Keeping layers \[1, 2, 3\]"):
        pruning.layer_importance(model, _features(model), LABELS, progress=False)


@pytest.mark.slow
def test_a_pruned_task_model_answers_as_the_masked_one(tmp_path):
    model = _model()
    heads, units = {1: [0]}, {0: list(range(0, 48, 2))}
    small = pruning.prune(model, heads=heads, units=units)
    assert type(small) is type(model) and small.backbone.config.layer_heads == (2, 1)
    masked = pruning.prune(model)  # a copy, then the same parts zeroed in place
    copy = backbone_pruning.masked(model.backbone, heads=heads, units=units)
    for target, source in zip(masked.backbone.weights, copy.weights, strict=True):
        target.assign(source)
    x = _features()
    want = np.asarray(masked(x))
    assert not np.allclose(want, np.asarray(model(x)), atol=1e-3)
    np.testing.assert_allclose(np.asarray(small(x)), want, atol=1e-5)
    small.save(tmp_path / "small.keras")
    np.testing.assert_allclose(np.asarray(keras.saving.load_model(tmp_path / "small.keras")(x)),
                               want, atol=1e-5)
    tokenizer = kbert.load(str(TASKS / "bert_seq_single")).tokenizer
    texts = ["a good day", "the worst film ever made"]
    got = kbert.pipeline("text-classification", model=small, tokenizer=tokenizer)(
        texts, top_k=None)
    ref = kbert.pipeline("text-classification", model=masked, tokenizer=tokenizer)(
        texts, top_k=None)
    for g, r in zip(got, ref):
        assert [a["label"] for a in g] == [a["label"] for a in r]
        np.testing.assert_allclose([a["score"] for a in g], [a["score"] for a in r], atol=1e-5)
    # ONNX Runtime runs the pruned graph (heads of another count than hidden / head size).
    on_onnx = kbert.pipeline("text-classification", model=small, tokenizer=tokenizer,
                             runtime="onnxruntime")
    assert on_onnx.source.name.endswith("on ONNX Runtime")
    onnx = on_onnx(texts, top_k=None)
    for g, r in zip(onnx, ref):
        assert [a["label"] for a in g] == [a["label"] for a in r]
        np.testing.assert_allclose([a["score"] for a in g], [a["score"] for a in r], atol=1e-4)
    # TFLite runs it too: every label's score, as the masked model's pipeline gives them.
    from tests.export.test_tflite_pipelines import run, strings

    path = kbert.pipeline("text-classification", model=small, tokenizer=tokenizer).export(
        str(tmp_path / "small.tflite"), format="tflite", top_k=None, truncation=True)
    lite = run(path, text=strings(texts))
    for row, r in zip(range(len(texts)), ref):
        got = dict(zip((label.decode() for label in lite["label"][row]), lite["score"][row]))
        np.testing.assert_allclose([got[a["label"]] for a in r], [a["score"] for a in r],
                                   atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["albert", "deberta_v3", "mobile_bert", "modern_bert"])
def test_a_pruned_model_of_each_family_saves_and_exports(family, tmp_path):
    """Beyond BERT's block (the test above): heads, units and a layer removed from a task
    model of a family with its own block give the masked model's answers, saved and
    reloaded, and in the exported SavedModel's pipeline as in the Keras pipeline's."""
    from tests.pipelines import reference

    loaded = kbert.load(str(TASKS / f"{family}_seq_single"))
    model, tokenizer = loaded.model, loaded.tokenizer
    heads, units = {0: [0]}, {0: [1, 2, 5]}
    small = pruning.prune(model, heads=heads, units=units)
    masked = pruning.prune(model)
    copy = backbone_pruning.masked(model.backbone, heads=heads, units=units)
    for target, source in zip(masked.backbone.weights, copy.weights, strict=True):
        target.assign(source)
    texts = ["a good day", "the worst film ever made"]
    ref = kbert.pipeline("text-classification", model=masked, tokenizer=tokenizer)(
        texts, top_k=None)
    assert ref != kbert.pipeline("text-classification", model=model, tokenizer=tokenizer)(
        texts, top_k=None)
    small.save(tmp_path / "small.keras")
    reloaded = keras.saving.load_model(tmp_path / "small.keras")
    pipe = kbert.pipeline("text-classification", model=reloaded, tokenizer=tokenizer)
    reference.assert_same(pipe(texts, top_k=None), ref)
    pipe.export(str(tmp_path / "export"))
    saved = kbert.pipeline("text-classification", model=str(tmp_path / "export"))
    reference.assert_same(saved(texts, top_k=None), ref)
    # Without a layer too (ALBERT's shared block runs once less).
    fewer = pruning.prune(model, layers=[0])
    assert fewer.backbone.config.num_layers == model.backbone.config.num_layers - 1
    fewer.save(tmp_path / "fewer.keras")
    x = {"token_ids": IDS, "padding_mask": (IDS > 0).astype(np.int32)}
    if "segment_ids" in model.backbone.input:
        x["segment_ids"] = np.zeros_like(IDS)
    np.testing.assert_allclose(np.asarray(keras.saving.load_model(tmp_path / "fewer.keras")(x)),
                               np.asarray(fewer(x)), atol=1e-5)
