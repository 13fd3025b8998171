"""NoNorm, MobileBertEmbeddings, MobileBertEncoder and MobileBertMaskedLMHead: the checks of
every layer (tests/layers/_checks.py) and what each computes."""

import keras
import numpy as np
import pytest

from kbert.models.mobile_bert.mobile_bert_embeddings import MobileBertEmbeddings
from kbert.models.mobile_bert.mobile_bert_encoder import MobileBertEncoder
from kbert.models.mobile_bert.mobile_bert_masked_lm_head import MobileBertMaskedLMHead
from kbert.models.mobile_bert.no_norm import NoNorm
from tests.layers import _checks

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 5, 16)).astype("float32")
IDS = RNG.integers(0, 30, (3, 5)).astype("int32")
MASK = np.array([[1] * 5, [1] * 3 + [0] * 2, [1] * 4 + [0]], "int32")
POSITIONS = np.array([[0, 2], [1, 2], [3, 0]], "int32")


def _embeddings(**kwargs):
    return MobileBertEmbeddings(vocabulary_size=30, hidden_size=16, embedding_size=4,
                                max_sequence_length=8, **kwargs)


def _encoder(**kwargs):
    return MobileBertEncoder(num_heads=2, intermediate_size=12, intra_bottleneck_size=8,
                             num_feedforward_networks=3, **kwargs)


def _head(**kwargs):
    table = keras.layers.Embedding(30, 4)
    table.build((None,))
    return MobileBertMaskedLMHead(vocabulary_size=30, token_embedding=table, **kwargs)


@pytest.mark.parametrize("make", [NoNorm, _embeddings, _encoder])
def test_config_round_trip(make):
    _checks.check_config_round_trip(make())


def test_head_config_round_trip():
    _checks.check_config_round_trip(_head(), not_in_config=("token_embedding",))


def test_no_norm_is_scale_and_bias():
    layer = NoNorm()
    layer.build(X.shape)
    layer.gamma.assign(np.arange(16, dtype="float32"))
    layer.beta.assign(np.ones(16, "float32"))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layer(X)), X * np.arange(16) + 1,
                               atol=1e-6)


def test_trigram_window_sees_the_neighbours():
    """The projection's input at position i is [e(i+1), e(i), e(i-1)], zeros past the ends."""
    layer = _embeddings(trigram_input=True)
    layer(IDS)
    table = keras.ops.convert_to_numpy(layer.token_embedding.embeddings)
    e = table[IDS]  # [B, S, 4]
    zero = np.zeros_like(e[:, :1])
    window = np.concatenate([np.concatenate([e[:, 1:], zero], 1), e,
                             np.concatenate([zero, e[:, :-1]], 1)], -1)
    kernel = keras.ops.convert_to_numpy(layer.projection.kernel)
    bias = keras.ops.convert_to_numpy(layer.projection.bias)
    positions = keras.ops.convert_to_numpy(layer.position_embedding)[:5]
    segments = keras.ops.convert_to_numpy(layer.segment_embedding.embeddings)[0]
    expected = window @ kernel + bias + positions + segments  # NoNorm starts at 1 and 0
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layer(IDS)), expected, atol=1e-5)
    assert layer.compute_output_spec(keras.KerasTensor((None, 5), "int32")).shape == (None, 5, 16)


def test_encoder_ignores_padding_and_keeps_the_width():
    layer = _encoder()
    out = keras.ops.convert_to_numpy(layer(X, padding_mask=MASK))
    assert out.shape == X.shape
    changed = X.copy()
    changed[1, 3:] = 100.0  # padded positions of row 1
    again = keras.ops.convert_to_numpy(layer(changed, padding_mask=MASK))
    np.testing.assert_allclose(again[1, :3], out[1, :3], atol=1e-5)
    assert len(layer.ffn_intermediate) == 2  # num_feedforward_networks - 1, then the last


def test_masked_lm_head_scores_against_the_widened_table():
    head = _head(activation="linear")
    logits = keras.ops.convert_to_numpy(head(X, POSITIONS))
    assert logits.shape == (3, 2, 30)
    x = np.take_along_axis(X, POSITIONS[..., None], 1)
    x = x @ keras.ops.convert_to_numpy(head.dense.kernel) + keras.ops.convert_to_numpy(
        head.dense.bias)
    x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
    kernel = np.concatenate([keras.ops.convert_to_numpy(head.token_embedding.embeddings),
                             keras.ops.convert_to_numpy(head.extra_output_kernel)], 1)
    assert kernel.shape == (30, 16)  # 4 tied columns, 12 of its own
    np.testing.assert_allclose(logits, x @ kernel.T, atol=1e-4)


def test_fit_steps():
    # Not X: the check's random target is drawn as X was, which the identity start (NoNorm)
    # and the residual (the encoder) already fit.
    _checks.check_fit_step(NoNorm, [X + 1.0])
    _checks.check_fit_step(_embeddings, [IDS, np.zeros_like(IDS)])
    # Wide initial weights: without a norm that rescales (NoNorm), 0.02-wide query and key
    # bottlenecks give scores near 0 and gradients under the check's tolerance.
    _checks.check_fit_step(lambda: _encoder(initializer_range=0.5), [X + 1.0, MASK],
                           call=lambda layer, t: layer(t[0], padding_mask=t[1]))


def test_mixed_bfloat16():
    _checks.check_mixed_bfloat16(NoNorm, [X])
    _checks.check_mixed_bfloat16(_embeddings, [IDS])
    _checks.check_mixed_bfloat16(_encoder, [X, MASK],
                                 call=lambda layer, t: layer(t[0], padding_mask=t[1]))


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="normalization_type 'batch_norm'"):
        _encoder(normalization_type="batch_norm")
    with pytest.raises(ValueError, match="intra_bottleneck_size=8 is not divisible by num_heads=3"):
        MobileBertEncoder(num_heads=3, intermediate_size=12, intra_bottleneck_size=8)


@pytest.mark.parametrize("make", [NoNorm, _embeddings, _encoder])
def test_a_config_that_names_the_old_module_loads(make):
    """These layers were in kbert.layers; a saved config naming that module finds them by
    their registered name ("kbert>NoNorm", ...), which the move kept."""
    layer = make()
    config = keras.saving.serialize_keras_object(layer)
    module = f"kbert.layers.{type(layer).__module__.rsplit('.', 1)[-1]}"
    assert config["registered_name"] == f"kbert>{type(layer).__name__}"
    restored = keras.saving.deserialize_keras_object({**config, "module": module})
    assert type(restored) is type(layer) and restored.get_config() == layer.get_config()
