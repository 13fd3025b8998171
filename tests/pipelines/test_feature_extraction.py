"""kbert.pipeline("feature-extraction") gives transformers' token features (any checkpoint,
through its backbone), and "sentence-embeddings" sentence-transformers' `encode`."""

import pytest

from tests.pipelines import reference
from tests.pipelines.conftest import ids_of

FEATURES, EMBEDDINGS = "feature_extraction", "sentence_embeddings"


@pytest.mark.parametrize("index", reference.cases(FEATURES, fast={"hf_tasks/bert_qa"}))
def test_features_match_transformers(pipelines, index):
    pipe = pipelines("feature-extraction", reference.model_of(FEATURES, index))
    reference.check(FEATURES, index, lambda inputs, options: pipe(inputs, **options),
                    ids_of(pipe))


@pytest.mark.parametrize("index", reference.cases(
    EMBEDDINGS, fast={"hf_tasks/st_bert_mean_normalize"}))
def test_embeddings_match_sentence_transformers(pipelines, index):
    pipe = pipelines("sentence-embeddings", reference.model_of(EMBEDDINGS, index))
    reference.check(EMBEDDINGS, index, lambda inputs, options: pipe(inputs, **options),
                    ids_of(pipe))


def test_sentence_embeddings_cut_texts_at_the_embedders_max_seq_length():
    """all-MiniLM-L6-v2 takes 256 of its 512 positions (sentence-transformers'
    max_seq_length): a longer text embeds as its first 254 wordpieces with [CLS] and [SEP],
    as sentence-transformers embeds it; feature-extraction keeps the 512 positions."""
    import keras
    import numpy as np

    import kbert
    from tests.tasks.test_text_embedder import MINILM

    pipe = kbert.pipeline("sentence-embeddings", model=str(MINILM))
    assert pipe.source.max_length == 256
    text = " ".join(["the quick brown fox jumps over the lazy dog near the river bank"] * 30)
    ids = pipe.encoder.encode([text], pipe.specials)[0].ids
    assert 256 < len(ids) + 2 <= 512, len(ids)
    tokenizer = pipe.tokenizer
    first = np.array([[tokenizer.cls_id, *ids[:254], tokenizer.sep_id]], "int32")
    x = {"token_ids": first, "segment_ids": np.zeros_like(first),
         "padding_mask": np.ones_like(first)}
    expected = keras.ops.convert_to_numpy(pipe.source.runner.model(x, training=False))[0]
    np.testing.assert_allclose(pipe(text, return_tensors=True), expected, atol=1e-5, rtol=0)
    features = kbert.pipeline("feature-extraction", model=pipe.source.runner.model,
                              tokenizer=tokenizer)
    assert features.source.max_length == 512
