import keras
import numpy as np
import pytest

from kbert.layers import TransformerEncoder
from tests.layers import _checks

RNG = np.random.default_rng(0)
X = RNG.normal(size=(2, 5, 8)).astype("float32")
MASK = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], "int32")


def make(**kwargs):
    return TransformerEncoder(num_heads=2, intermediate_size=16, **kwargs)


def _call(layer, tensors):
    return layer(tensors[0], padding_mask=tensors[1])


def test_config_round_trip():
    _checks.check_config_round_trip(
        make(activation="relu", dropout=0.2, attention_dropout=0.0, layer_norm_epsilon=1e-6)
    )


def test_output_shape():
    assert tuple(make()(X, padding_mask=MASK).shape) == (2, 5, 8)


def test_padding_is_ignored():
    layer = make(dropout=0.0, attention_dropout=0.0)
    out = keras.ops.convert_to_numpy(layer(X, padding_mask=MASK))
    changed = X.copy()
    changed[0, 3:] = 100.0  # whatever sits at padded positions must not reach real ones
    out2 = keras.ops.convert_to_numpy(layer(changed, padding_mask=MASK))
    np.testing.assert_allclose(out[0, :3], out2[0, :3], atol=1e-5)
    # ...and a sequence cut to its real length gives the same vectors.
    out3 = keras.ops.convert_to_numpy(layer(X[:1, :3], padding_mask=MASK[:1, :3]))
    np.testing.assert_allclose(out[0, :3], out3[0], atol=1e-5)


def test_matches_reference_attention():
    """Post-LN block written out in NumPy from the layer's own weights."""
    layer = make(dropout=0.0, attention_dropout=0.0, activation="relu")
    out = keras.ops.convert_to_numpy(layer(X, padding_mask=MASK))
    w = {v.path.split("/", 1)[1]: keras.ops.convert_to_numpy(v) for v in layer.weights}

    def norm(x, gamma, beta):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * gamma + beta

    qkv = np.einsum("bsh,hcnd->bscnd", X, w["qkv_dense/kernel"]) + w["qkv_dense/bias"]
    q, k, v = qkv[:, :, 0] / 2.0, qkv[:, :, 1], qkv[:, :, 2]  # head size 4 -> scale 1/2
    scores = np.einsum("bqnd,bknd->bnqk", q, k) + np.where(MASK[:, None, None, :], 0, -1e9)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    ctx = np.einsum("bnqk,bknd->bqnd", probs, v)
    att = np.einsum("bqnd,ndh->bqh", ctx, w["attention_output_dense/kernel"])
    att = att + w["attention_output_dense/bias"]
    h = norm(att + X, w["attention_layer_norm/gamma"], w["attention_layer_norm/beta"])
    ff = np.maximum(h @ w["intermediate_dense/kernel"] + w["intermediate_dense/bias"], 0)
    ff = ff @ w["output_dense/kernel"] + w["output_dense/bias"]
    expected = norm(ff + h, w["output_layer_norm/gamma"], w["output_layer_norm/beta"])
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_heads_must_divide_hidden_size():
    with pytest.raises(ValueError, match="hidden size 8 is not divisible by num_heads=3"):
        TransformerEncoder(num_heads=3, intermediate_size=16)(X)


def test_unknown_activation():
    with pytest.raises(ValueError, match="Unknown activation 'swish2'. Allowed: gelu"):
        make(activation="swish2")


def test_fit_step():
    _checks.check_fit_step(make, [X, MASK], call=_call)


def test_mixed_bfloat16():
    _checks.check_mixed_bfloat16(make, [X, MASK], call=_call)


def test_the_export_form_is_the_same_block():
    """Under `attention_as_matmuls` (what the ONNX export traces) the query, key and value
    are three matmuls of the fused kernel's slices and the output one of its reshape: the
    same numbers (1e-5), eagerly and traced with an open batch and length, LoRA's merged
    kernel included."""
    import tensorflow as tf

    from kbert.layers import lora
    from kbert.layers.encoder_block import attention_as_matmuls

    layer = make(dropout=0.0, attention_dropout=0.0)
    want = keras.ops.convert_to_numpy(layer(X, padding_mask=MASK))
    traced = tf.function(lambda x, m: layer(x, padding_mask=m), input_signature=[
        tf.TensorSpec([None, None, 8], tf.float32), tf.TensorSpec([None, None], tf.int32)])
    with attention_as_matmuls():
        np.testing.assert_allclose(keras.ops.convert_to_numpy(layer(X, padding_mask=MASK)),
                                   want, atol=1e-5)
        np.testing.assert_allclose(traced(X, MASK).numpy(), want, atol=1e-5)
    assert "qkv_dense" not in " ".join(op.name for op in traced.get_concrete_function(
        ).graph.get_operations() if op.type == "Einsum")
    before = want
    backbone_like = keras.Sequential([keras.Input((5, 8)), layer])
    backbone_like.transformer_layers = [layer]
    lora.enable_lora(backbone_like, rank=2)
    for weight in (layer.qkv_dense.lora_kernel_b, layer.attention_output_dense.lora_kernel_b):
        weight.assign(RNG.normal(size=weight.shape).astype("float32"))
    want = keras.ops.convert_to_numpy(layer(X, padding_mask=MASK))
    assert not np.allclose(want, before, atol=1e-3)  # LoRA's update counts
    with attention_as_matmuls():
        got = keras.ops.convert_to_numpy(layer(X, padding_mask=MASK))
    np.testing.assert_allclose(got, want, atol=1e-5)
