"""kbert.pipeline("token-classification") gives transformers' entities on the fixtures'
checkpoints: every aggregation_strategy, ignore_labels, offsets into the original text of
hostile inputs (accents, CJK, emoji, control characters, runs of whitespace, unknown words,
a 20,000-character text cut to the model)."""

import pytest

from tests.pipelines import reference
from tests.pipelines.conftest import ids_of

TASK = "token_classification"


@pytest.mark.parametrize("index", reference.cases(TASK, fast={"hf_tasks/bert_token"}))
def test_matches_transformers(pipelines, index):
    pipe = pipelines("token-classification", reference.model_of(TASK, index))
    reference.check(TASK, index, lambda inputs, options: pipe(inputs, **options), ids_of(pipe))
