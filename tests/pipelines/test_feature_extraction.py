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
