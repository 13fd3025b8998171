"""kbert.pipeline("text-classification") gives transformers' outputs on the fixtures'
checkpoints: labels, scores (1e-4), top_k, function_to_apply, pairs, truncation."""

import pytest

from tests.pipelines import reference
from tests.pipelines.conftest import ids_of

TASK = "text_classification"


@pytest.mark.parametrize("index", reference.cases(TASK, fast={"hf_tasks/bert_seq_single"}))
def test_matches_transformers(pipelines, index):
    pipe = pipelines("text-classification", reference.model_of(TASK, index))
    reference.check(TASK, index, lambda inputs, options: pipe(inputs, **options), ids_of(pipe))
