"""kbert.pipeline("zero-shot-classification") gives transformers' rankings on an NLI
checkpoint: candidate labels (a list or one comma-separated string), multi_label, a single
label, hypothesis_template, a 20,000-character text, and the same refusals."""

import pytest

from tests.pipelines import reference
from tests.pipelines.conftest import ids_of

TASK = "zero_shot_classification"


@pytest.mark.parametrize("index", reference.cases(TASK, fast={"hf_tasks/bert_nli"}))
def test_matches_transformers(pipelines, index):
    pipe = pipelines("zero-shot-classification", reference.model_of(TASK, index))
    reference.check(TASK, index, lambda inputs, options: pipe(inputs, **options), ids_of(pipe))


def test_needs_an_entailment_label(pipelines):
    import kbert

    classifier = pipelines("text-classification", "hf_tasks/bert_seq_single")
    with pytest.raises(ValueError, match="entail"):
        kbert.pipeline("zero-shot-classification", model=classifier.source.runner.model,
                       tokenizer=classifier.tokenizer)
