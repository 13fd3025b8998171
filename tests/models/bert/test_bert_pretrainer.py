import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.models import BertBackbone, BertPretrainer
from tests.helpers import TINY, decayed_paths, random_batch

FEATURES, LABELS = random_batch()


def make(next_sentence_prediction=True, **overrides):
    backbone = BertBackbone(**{**TINY, **overrides})
    return BertPretrainer(backbone, next_sentence_prediction=next_sentence_prediction)


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_outputs():
    out = make()(FEATURES)
    assert tuple(out["mlm_logits"].shape) == (4, 5, TINY["vocabulary_size"])
    assert tuple(out["nsp_logits"].shape) == (4, 2)
    assert set(make(False)(FEATURES)) == {"mlm_logits"}


def test_loss_is_weighted_mlm_plus_nsp():
    model = make(dropout=0.0, attention_dropout=0.0)
    model.compile()
    logs = model.evaluate(FEATURES, LABELS, batch_size=4, return_dict=True, verbose=0)
    out = {k: keras.ops.convert_to_numpy(v) for k, v in model(FEATURES).items()}
    ce = -np.take_along_axis(log_softmax(out["mlm_logits"]), LABELS["mask_ids"][..., None], -1)[..., 0]
    w = LABELS["mask_weights"]
    mlm = (ce * w).sum() / w.sum()
    nsp_ce = -np.take_along_axis(
        log_softmax(out["nsp_logits"]), LABELS["next_sentence_labels"][:, None], -1
    )
    nsp = nsp_ce.mean()
    np.testing.assert_allclose(logs["mlm_loss"], mlm, rtol=1e-5)
    np.testing.assert_allclose(logs["nsp_loss"], nsp, rtol=1e-5)
    np.testing.assert_allclose(logs["loss"], mlm + nsp, rtol=1e-5)
    # Accuracy counts weighted positions only.
    hits = out["mlm_logits"].argmax(-1) == LABELS["mask_ids"]
    np.testing.assert_allclose(logs["mlm_accuracy"], (hits * w).sum() / w.sum(), rtol=1e-6)


def test_padded_predictions_do_not_count():
    model = make(dropout=0.0, attention_dropout=0.0)
    model.compile()
    changed = dict(LABELS, mask_ids=LABELS["mask_ids"].copy())
    changed["mask_ids"][0, -2:] = 1  # weight 0 there
    a = model.evaluate(FEATURES, LABELS, return_dict=True, verbose=0)
    b = model.evaluate(FEATURES, changed, return_dict=True, verbose=0)
    assert a["mlm_loss"] == pytest.approx(b["mlm_loss"], rel=1e-6)


@pytest.mark.slow
def test_fit_on_a_dataset_reports_metrics_and_learns():
    model = make()
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    dataset = tf.data.Dataset.from_tensors((FEATURES, LABELS)).repeat(40)
    history = model.fit(dataset, epochs=1, verbose=0).history
    assert set(history) == {"loss", "mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy"}
    logs = model.evaluate(FEATURES, LABELS, return_dict=True, verbose=0)
    # Overfitting one batch: from ~ln(97) = 4.6 at the start to well under half of it.
    assert logs["mlm_loss"] < 2.0, logs
    assert logs["mlm_accuracy"] > 0.5, logs


@pytest.mark.slow
def test_mlm_only():
    model = make(next_sentence_prediction=False)
    model.compile()
    labels = {k: LABELS[k] for k in ("mask_ids", "mask_weights")}
    logs = model.fit(FEATURES, labels, epochs=1, verbose=0).history
    assert set(logs) == {"loss", "mlm_loss", "mlm_accuracy"}
    assert logs["loss"] == pytest.approx(logs["mlm_loss"])


@pytest.mark.slow
def test_mask_weights_default_to_ones():
    model = make(False, dropout=0.0, attention_dropout=0.0)
    model.compile()
    ones = dict(mask_ids=LABELS["mask_ids"], mask_weights=np.ones_like(LABELS["mask_weights"]))
    a = model.evaluate(FEATURES, {"mask_ids": LABELS["mask_ids"]}, return_dict=True, verbose=0)
    b = model.evaluate(FEATURES, ones, return_dict=True, verbose=0)
    assert a["loss"] == pytest.approx(b["loss"], rel=1e-6)


def test_bad_compile_and_labels():
    model = make()
    with pytest.raises(ValueError, match="computes its own loss"):
        model.compile(loss="mse")
    model.compile()
    with pytest.raises(ValueError, match=r"labels as a dict with keys \['mask_ids', 'next_sentence_labels'\] \(mask_weights optional\)"):
        model.train_on_batch(FEATURES, {"mask_ids": LABELS["mask_ids"]})


@pytest.mark.slow
def test_keras_save_and_load(tmp_path):
    model = make()
    model.compile()
    model.fit(FEATURES, LABELS, epochs=1, verbose=0)
    path = str(tmp_path / "pretrainer.keras")
    model.save(path)
    restored = keras.saving.load_model(path)  # safe_mode on
    assert isinstance(restored, BertPretrainer)
    # The head is still tied to the restored backbone's embedding table.
    assert restored.mlm_head.token_embedding is restored.backbone.token_embedding
    for key, value in model(FEATURES).items():
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(restored(FEATURES)[key]), keras.ops.convert_to_numpy(value)
        )
    # The restored optimizer still spares LayerNorm and biases from weight decay.
    decayed = decayed_paths(restored.optimizer, restored.trainable_variables)
    assert "mlm_head/layer_norm/gamma" not in decayed and "pooler/dense/bias" not in decayed
    assert "pooler/dense/kernel" in decayed
    # Training goes on from the restored optimizer state.
    logs = restored.train_on_batch(FEATURES, LABELS, return_dict=True)
    assert np.isfinite(logs["loss"])


def test_weights_are_shared_not_duplicated():
    model = make()
    backbone_params = model.backbone.count_params()
    head = 32 * 32 + 32 + 2 * 32 + TINY["vocabulary_size"]  # dense + LayerNorm + output bias
    nsp = 32 * 2 + 2
    assert model.count_params() == backbone_params + head + nsp


@pytest.mark.slow
def test_mixed_float16_scales_the_loss():
    model = BertPretrainer(BertBackbone(**TINY, dtype="mixed_float16"))
    assert model.dtype_policy.name == "mixed_float16"
    model.compile()
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    logs = model.train_on_batch(FEATURES, LABELS, return_dict=True)
    assert np.isfinite(logs["loss"])


@pytest.mark.slow
def test_mixed_float16_differentiates_the_scaled_loss_and_applies_the_unscaled_gradient():
    """The step differentiates the loss times the dynamic scale (2**15 at first) and divides
    the gradient by it again: with SGD, the weights move by the learning rate times the
    float32 twin's gradient of the unscaled loss (a missing unscale would move them 32768
    times as far); finite gradients keep the scale."""
    keras.utils.set_random_seed(0)
    config = dict(TINY, dropout=0.0, attention_dropout=0.0)
    model = BertPretrainer(BertBackbone(**config, dtype="mixed_float16"))
    model.compile(optimizer=keras.optimizers.SGD(0.5), run_eagerly=True)
    optimizer = model.optimizer
    assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    recorded, scale_loss = [], optimizer.scale_loss
    optimizer.scale_loss = lambda loss: recorded.append((loss, scale_loss(loss))) or \
        recorded[-1][1]
    twin = BertPretrainer(BertBackbone(**config))
    twin.set_weights(model.get_weights())
    before = [np.array(v) for v in model.trainable_variables]
    model.train_on_batch(FEATURES, LABELS)

    (loss, scaled), = recorded
    assert float(optimizer.dynamic_scale) == 2.0 ** 15
    assert float(scaled) == pytest.approx(float(loss) * 2.0 ** 15, rel=1e-6)
    with tf.GradientTape() as tape:
        twin_loss = twin.compute_loss(FEATURES, LABELS, twin(FEATURES, training=True))
    gradients = tape.gradient(twin_loss, twin.trainable_variables)
    assert float(loss) == pytest.approx(float(twin_loss), rel=1e-2)  # float16's rounding
    moved = np.concatenate([(b - np.array(v)).ravel() / 0.5
                            for b, v in zip(before, model.trainable_variables)])
    expected = np.concatenate([np.asarray(tf.convert_to_tensor(g)).ravel() for g in gradients])
    assert np.abs(expected).max() > 1e-3
    error = np.abs(moved - expected).max() / np.abs(expected).max()
    assert error < 0.02, error  # 0.001 seen
