"""kbert.pipeline("feature-extraction", output_hidden_states=True, output_attentions=True):
each text's hidden states and attentions as `Backbone.with_internals` gives them for that
text alone (so, as transformers' `hidden_states` / `attentions`: tests/models/
test_internals.py), cut to its tokens, in a padded batch, at construction or per call."""

import numpy as np
import pytest

import kbert
from kbert.pipelines import FeatureExtractionPipeline
from kbert.pipelines.model_source import Source
from tests.pipelines.conftest import ids_of
from tests.pipelines.reference import FIXTURES

TEXTS = ["the words were in the way.", "he said: one, two!", "they"]


@pytest.fixture(scope="module")
def pipe():
    return kbert.pipeline("feature-extraction", model=str(FIXTURES / "hf_tiny" /
                                                          "tiny_bert_general"))


def alone(pipe, text):
    ids = np.array([ids_of(pipe)(text)], np.int32)
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
              "padding_mask": np.ones_like(ids)}
    model = pipe.source.runner.model.with_internals()
    outputs = model({k: v for k, v in inputs.items() if k in model.input})
    return {k: [np.asarray(x) for x in outputs[k]] for k in ("hidden_states", "attentions")}


def test_hidden_states_and_attentions_equal_with_internals_per_text(pipe):
    answers = pipe(TEXTS, output_hidden_states=True, output_attentions=True,
                   return_tensors=True, batch_size=3)
    plain = pipe(TEXTS, return_tensors=True)
    config = pipe.source.runner.model.config
    for text, answer, features in zip(TEXTS, answers, plain):
        expected = alone(pipe, text)
        tokens = len(ids_of(pipe)(text))
        assert set(answer) == {"last_hidden_state", "hidden_states", "attentions"}
        assert isinstance(answer["hidden_states"], tuple)
        assert len(answer["hidden_states"]) == config.num_layers + 1
        assert len(answer["attentions"]) == config.num_layers
        for got, want in zip(answer["hidden_states"], expected["hidden_states"]):
            assert got.shape == (1, tokens, config.hidden_size)
            np.testing.assert_allclose(got, want, atol=1e-5)
        for got, want in zip(answer["attentions"], expected["attentions"]):
            assert got.shape == (1, config.num_heads, tokens, tokens)
            np.testing.assert_allclose(got, want, atol=1e-5)
        # The usual answer is unchanged, and it is the last hidden state.
        np.testing.assert_allclose(answer["last_hidden_state"], features, atol=1e-6)
        np.testing.assert_allclose(answer["hidden_states"][-1], features, atol=1e-5)


def test_options_at_construction_lists_and_one_text():
    pipe = kbert.pipeline("feature-extraction",
                          model=str(FIXTURES / "hf_tiny" / "tiny_bert_general"),
                          output_attentions=True)
    answer = pipe(TEXTS[1])
    assert set(answer) == {"last_hidden_state", "attentions"}
    expected = alone(pipe, TEXTS[1])
    assert isinstance(answer["attentions"], list) and isinstance(answer["attentions"][0], list)
    np.testing.assert_allclose(np.array(answer["attentions"]),
                               np.stack(expected["attentions"]), atol=1e-5)
    assert isinstance(pipe(TEXTS[1], output_attentions=False), list)
    with pytest.raises(ValueError, match="writes the last hidden states only"):
        pipe.export("unused")


def test_a_model_without_layers_is_refused(pipe):
    source = Source(lambda features: {}, pipe.tokenizer, "backbone", "SavedModel x", 16)
    with pytest.raises(ValueError, match="it runs SavedModel x, whose graph returns its outputs alone"):
        FeatureExtractionPipeline(source, output_hidden_states=True)
    assert FeatureExtractionPipeline(source).source is source
