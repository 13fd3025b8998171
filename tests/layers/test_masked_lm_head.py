import keras
import numpy as np
import pytest

from kbert.layers import MaskedLMHead
from tests.layers import _checks

RNG = np.random.default_rng(0)
X = RNG.normal(size=(2, 6, 8)).astype("float32")
POSITIONS = np.array([[0, 3, 5], [1, 1, 2]], "int32")


def make(**kwargs):
    return MaskedLMHead(vocabulary_size=13, **kwargs)


def test_config_round_trip():
    _checks.check_config_round_trip(make(activation="gelu", layer_norm_epsilon=1e-5),
                                    not_in_config=("token_embedding",))


def test_scores_only_the_masked_positions_against_the_tied_table():
    embedding = keras.layers.Embedding(13, 4)
    embedding.build((None,))
    head = make(token_embedding=embedding, activation="relu")
    logits = keras.ops.convert_to_numpy(head(X, POSITIONS))
    assert logits.shape == (2, 3, 13)
    assert not hasattr(head, "output_kernel")  # tied: no kernel of its own
    gathered = np.take_along_axis(X, POSITIONS[:, :, None], axis=1)
    w = {v.path.split("/", 1)[1]: keras.ops.convert_to_numpy(v) for v in head.weights}
    h = np.maximum(gathered @ w["dense/kernel"] + w["dense/bias"], 0)
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-12)
    table = keras.ops.convert_to_numpy(embedding.embeddings)
    np.testing.assert_allclose(logits, h @ table.T + w["output_bias"], atol=1e-5)


def test_untied_has_own_kernel():
    head = make()
    head(X, POSITIONS)
    assert tuple(head.output_kernel.shape) == (13, 8)


def test_vocabulary_must_match_tied_table():
    with pytest.raises(ValueError, match="vocabulary_size=13 does not match .* 10 rows"):
        make(token_embedding=keras.layers.Embedding(10, 4))


def _call(layer, tensors):
    return layer(tensors[0], tensors[1])


def test_fit_step():
    _checks.check_fit_step(make, [X, POSITIONS], call=_call)


def test_mixed_bfloat16():
    _checks.check_mixed_bfloat16(make, [X, POSITIONS], call=_call)
