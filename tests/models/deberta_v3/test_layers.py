"""DeBERTa-v3's layers on their own: config round trips, shapes, mixed_bfloat16, masking."""

import keras
import numpy as np
import pytest

from kbert.models.deberta_v3.deberta_v3_embeddings import DebertaV3Embeddings, RelativeEmbedding
from kbert.models.deberta_v3.disentangled_attention_encoder import DisentangledAttentionEncoder

BLOCK = dict(num_heads=4, intermediate_size=16, dropout=0.0, attention_dropout=0.0,
             position_buckets=4, max_relative_positions=12)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, 6, 8)).astype("float32")
    relative = rng.normal(size=(8, 8)).astype("float32")
    mask = np.array([[1] * 6, [1] * 4 + [0] * 2], "int32")
    return x, relative, mask


@pytest.mark.parametrize("layer", [
    DisentangledAttentionEncoder(**BLOCK, attention_types=("c2p",)),
    DebertaV3Embeddings(vocabulary_size=11, hidden_size=8),
    RelativeEmbedding(position_buckets=4, hidden_size=8),
])
def test_config_round_trip(layer):
    config = layer.get_config()
    assert type(layer).from_config(config).get_config() == config


def test_block_shape_dtype_and_padding():
    x, relative, mask = _inputs()
    block = DisentangledAttentionEncoder(**BLOCK)
    out = keras.ops.convert_to_numpy(block(x, relative, padding_mask=mask))
    assert out.shape == (2, 6, 8)
    # Padded keys are ignored: changing them leaves the real tokens' outputs unchanged.
    changed = x.copy()
    changed[1, 4:] += 5.0
    again = keras.ops.convert_to_numpy(block(changed, relative, padding_mask=mask))
    np.testing.assert_allclose(again[1, :4], out[1, :4], atol=1e-5, rtol=0)
    # Each position term alone reads the relative table; with none, the table is not read.
    for types, reads in ((("c2p",), True), (("p2c",), True), ((), False)):
        other = DisentangledAttentionEncoder(**BLOCK, attention_types=types)
        a = keras.ops.convert_to_numpy(other(x, relative, mask))
        b = keras.ops.convert_to_numpy(other(x, 2 * relative + 1, mask))
        assert np.allclose(a, b) != reads, types


def test_mixed_bfloat16():
    x, relative, mask = _inputs()
    block = DisentangledAttentionEncoder(**BLOCK, dtype="mixed_bfloat16")
    out = block(x, relative, padding_mask=mask)
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
    assert all(w.dtype == "float32" for w in block.weights)
    embeddings = DebertaV3Embeddings(vocabulary_size=11, hidden_size=8, dtype="mixed_bfloat16")
    out = embeddings(np.array([[1, 2, 3]]), np.array([[1, 1, 0]]))
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
    assert not np.any(keras.ops.convert_to_numpy(keras.ops.cast(out, "float32"))[0, 2])
