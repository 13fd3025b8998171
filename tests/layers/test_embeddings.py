import keras
import numpy as np
import pytest

from kbert.layers import Embeddings
from tests.layers import _checks

IDS = np.array([[2, 5, 7, 0], [3, 3, 9, 1]], "int32")
SEGMENTS = np.array([[0, 0, 1, 1], [0, 1, 1, 1]], "int32")


def make(**kwargs):
    return Embeddings(vocabulary_size=11, hidden_size=8, max_sequence_length=6, **kwargs)


def test_config_round_trip():
    _checks.check_config_round_trip(make(embedding_size=4, type_vocab_size=3, dropout=0.2))


@pytest.mark.parametrize("embedding_size", [None, 4])
def test_output_shape_and_sum(embedding_size):
    layer = make(embedding_size=embedding_size, dropout=0.0)
    out = layer(IDS, SEGMENTS)
    assert tuple(out.shape) == (2, 4, 8)
    if embedding_size is None:
        # Token + position + segment, then LayerNorm (gamma 1, beta 0).
        total = (
            keras.ops.convert_to_numpy(layer.token_embedding.embeddings)[IDS]
            + keras.ops.convert_to_numpy(layer.position_embedding)[:4][None]
            + keras.ops.convert_to_numpy(layer.segment_embedding.embeddings)[SEGMENTS]
        )
        mean = total.mean(-1, keepdims=True)
        var = total.var(-1, keepdims=True)
        np.testing.assert_allclose(out, (total - mean) / np.sqrt(var + 1e-12), atol=1e-5)
    else:
        assert tuple(layer.token_embedding.embeddings.shape) == (11, 4)
        assert tuple(layer.projection.kernel.shape) == (4, 8)


def test_no_segments():
    layer = make(type_vocab_size=0)
    assert layer.segment_embedding is None
    assert tuple(layer(IDS).shape) == (2, 4, 8)


def test_position_offset_counts_over_the_tokens():
    """RoBERTa's positions: the table has `position_offset` rows more; the tokens take rows
    offset, offset + 1, ... in order, padding (mask 0) row offset - 1, wherever it is."""
    layer = make(position_offset=2, type_vocab_size=1, dropout=0.0)
    _checks.check_config_round_trip(layer)
    mask = np.array([[1, 1, 1, 0], [0, 0, 1, 1]], "int32")
    out = keras.ops.convert_to_numpy(layer(IDS, padding_mask=mask))
    assert tuple(layer.position_embedding.shape) == (6 + 2, 8)
    table = keras.ops.convert_to_numpy(layer.position_embedding)
    rows = np.array([[2, 3, 4, 1], [1, 1, 2, 3]])
    total = (keras.ops.convert_to_numpy(layer.token_embedding.embeddings)[IDS] + table[rows]
             + keras.ops.convert_to_numpy(layer.segment_embedding.embeddings)[0])
    mean, var = total.mean(-1, keepdims=True), total.var(-1, keepdims=True)
    np.testing.assert_allclose(out, (total - mean) / np.sqrt(var + 1e-12), atol=1e-5)
    # No mask: no padding, every column a token. Six tokens fit, a seventh does not.
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layer(IDS)),
                               keras.ops.convert_to_numpy(layer(IDS, padding_mask=np.ones_like(
                                   IDS))), atol=1e-6)
    layer(np.zeros((1, 6), "int32"))
    with pytest.raises(ValueError, match="Sequence length 7 is longer"):
        layer(np.zeros((1, 7), "int32"))


def test_too_long_sequence_is_an_error():
    with pytest.raises(ValueError, match="Sequence length 7 is longer than max_sequence_length=6"):
        make()(np.zeros((1, 7), "int32"), np.zeros((1, 7), "int32"))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"hidden_size": 0}, "hidden_size"),
        ({"dropout": 1.5}, "dropout"),
        ({"embedding_size": -2}, "embedding_size"),
        ({"type_vocab_size": -1}, "type_vocab_size"),
        ({"position_offset": -1}, "position_offset"),
    ],
)
def test_bad_arguments(kwargs, message):
    args = dict(vocabulary_size=11, hidden_size=8, max_sequence_length=6)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        Embeddings(**args)


def test_fit_step():
    _checks.check_fit_step(lambda: make(embedding_size=4), [IDS, SEGMENTS])


def test_mixed_bfloat16():
    _checks.check_mixed_bfloat16(lambda **kw: make(embedding_size=4, **kw), [IDS, SEGMENTS])
