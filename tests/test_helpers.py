"""The test helpers that replace a costly step by a cheap one give what the costly step gives."""

import keras
import pytest

import kbert
from tests.helpers import shapes_only


@pytest.mark.parametrize("name,options", [
    ("bert_tiny", {}),  # backbone, MLM and NSP heads
    ("albert_base", {"head": None, "num_layers": 2}),  # shared blocks, factorized embeddings
    ("deberta_v3_xsmall", {"head": None, "num_layers": 1, "vocabulary_size": 1000}),
    ("mobile_bert", {"num_layers": 1, "vocabulary_size": 1000}),
])
def test_shapes_only_counts_what_a_built_model_counts(name, options):
    unvalued = shapes_only(lambda: kbert.presets.load(name, weights=None, **options))
    built = kbert.presets.load(name, weights=None, **options)
    assert unvalued.count_params() == built.count_params()
    assert [tuple(w.shape) for w in unvalued.weights] == [tuple(w.shape) for w in built.weights]
    # Nothing was drawn, then or since: a symbolic call traced by the backend (a Lambda's) ends
    # in a stateless scope closing, where Keras initializes the variables still waiting.
    keras.layers.Lambda(lambda x: x * 2)(keras.Input((2,)))
    assert all(w._value is None for w in unvalued.weights)  # Keras' "not initialized yet"
    assert all(w._value is not None for w in built.weights)
