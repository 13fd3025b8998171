"""ModernBERT: the sliding window computed in chunks equals the whole-matrix computation, its
cost is linear in the sequence, and the config refuses what the architecture cannot be."""

import numpy as np
import pytest
from keras import ops

from kbert import models
from kbert.convert import families
from kbert.models.modern_bert import modern_bert_attention
from kbert.models.modern_bert.modern_bert_encoder import ModernBertEncoder

SIZES = dict(vocabulary_size=40, num_layers=3, hidden_size=16, num_heads=2,
             intermediate_size=24, max_sequence_length=64)


def _block(radius, **settings):
    return ModernBertEncoder(num_heads=2, intermediate_size=24, window_radius=radius,
                             rope_theta=10000.0, **settings)


@pytest.mark.parametrize("radius,length", [(3, 29), (4, 24), (8, 5)])
def test_the_window_in_chunks_equals_the_whole_matrix_with_the_window_as_a_mask(radius,
                                                                                   length):
    """29 tokens: nearly 10 windows of 3, not a whole number of chunks; 24: whole chunks;
    5 tokens under a radius of 8: one chunk, mostly past the end."""
    block = _block(radius, attention_bias=True, mlp_bias=True, norm_bias=True)
    rng = np.random.default_rng(radius)
    x = rng.normal(size=(2, length, 16)).astype("float32")
    mask = np.ones((2, length), "int32")
    mask[1, length * 2 // 3:] = 0
    chunked = np.asarray(block(x, padding_mask=mask))
    whole, probs = block(x, padding_mask=mask, return_attention_probs=True)
    real = mask.astype(bool)
    np.testing.assert_allclose(chunked[real], np.asarray(whole)[real], atol=1e-5, rtol=0)
    # The reference is the window: a real query gives 0 to every key farther than `radius`
    # and to every padded key.
    probs = np.asarray(probs)
    i, j = np.indices((length, length))
    outside = (np.abs(i - j) > radius)[None, None] | ~real[:, None, None, :]
    assert probs[np.broadcast_to(outside & real[:, None, :, None], probs.shape)].max() == 0.0


def test_a_window_layer_attends_to_chunks_linear_in_the_sequence():
    """The arrays that reach the attention of a window layer: per query chunk of `radius`
    tokens, 3 * radius keys; their scores, [B * S / radius, N, radius, 3 * radius], grow as
    S * radius, and no array is S x S."""
    radius, heads, size = 4, 2, 8
    seen = []

    def attend(query, key, value, padding_mask, training, bias=None):
        seen.append((tuple(query.shape), tuple(key.shape), tuple(bias.shape)))
        return query

    for length in (1024, 2048):
        q = ops.zeros((1, length, heads, size))
        context = modern_bert_attention.windowed_attention(attend, q, q, q, None, radius,
                                                           False)
        assert tuple(context.shape) == (1, length, heads, size)
    (q1, k1, b1), (q2, k2, b2) = seen
    assert q1 == (1024 // radius, radius, heads, size) and k1 == (1024 // radius, 3 * radius,
                                                                  heads, size)
    assert b1 == b2 == (1, 1, radius, 3 * radius)
    scores = [q[0] * heads * q[1] * k[1] for q, k in ((q1, k1), (q2, k2))]
    assert scores == [1024 * heads * 3 * radius, 2048 * heads * 3 * radius]


def test_layers_alternate_global_and_window_attention_with_their_rotary_bases():
    config = models.ModernBertConfig(**{**SIZES, "num_layers": 5}, global_attn_every_n_layers=2,
                                     local_attention=6, global_rope_theta=1e5,
                                     local_rope_theta=1e3)
    backbone = models.build("modern_bert", config, head=None)
    blocks = backbone.transformer_layers
    assert [b.window_radius for b in blocks] == [None, 3, None, 3, None]
    assert [b.rope_theta for b in blocks] == [1e5, 1e3, 1e5, 1e3, 1e5]
    assert [b.attention_norm for b in blocks] == [False, True, True, True, True]
    assert backbone.pooler is None and not backbone.has_pooler


def test_without_biases_the_model_has_none_and_the_weight_map_covers_it():
    config = models.ModernBertConfig(**SIZES, global_attn_every_n_layers=2, decoder_bias=False)
    model = models.build("modern_bert", config)
    paths = [v.path for v in model.weights]
    assert not [p for p in paths if p.endswith(("/bias", "/beta", "output_bias"))], paths
    entries = families.get("modern_bert").entries(model)
    assert sorted(id(e.variable) for e in entries) == sorted(id(v) for v in model.weights)
    names = {n for e in entries for n in e.names}
    assert "decoder.bias" not in names and "layers.0.attn_norm.weight" not in names
    assert "layers.1.attn_norm.weight" in names and "final_norm.weight" in names


@pytest.mark.parametrize("change,message", [
    (dict(local_attention=1), r"local_attention=1: .* at least 2"),
    (dict(classifier_pooling="max"), r"classifier_pooling='max'; allowed: 'cls', 'mean'"),
    (dict(hidden_size=15, num_heads=3), r"hidden_size / num_heads = 5"),
    (dict(hidden_size=12, num_heads=4), r"each head needs an even width"),
    (dict(type_vocab_size=2), r"type_vocab_size=2: ModernBERT has no segment"),
    (dict(norm_bias=1), r"`norm_bias` must be True or False, got 1"),
    (dict(classifier_activation="gelu_fast"), r"Unknown activation 'gelu_fast'"),
    (dict(global_attn_every_n_layers=0), r"`global_attn_every_n_layers` must be an integer"),
])
def test_the_config_refuses_what_the_architecture_cannot_be(change, message):
    with pytest.raises(ValueError, match=message):
        models.ModernBertConfig(**{**SIZES, **change})


def test_the_config_reads_transformers_names():
    config = models.ModernBertConfig.from_dict({
        "vocab_size": 50, "num_hidden_layers": 2, "hidden_size": 16,
        "num_attention_heads": 2, "intermediate_size": 24, "hidden_activation": "gelu",
        "norm_eps": 1e-6, "mlp_dropout": 0.1})
    assert (config.layer_norm_epsilon, config.dropout, config.max_sequence_length,
            config.local_attention, config.global_attn_every_n_layers) == (1e-6, 0.1, 8192,
                                                                           128, 3)
