"""kbert.pipeline on ModernBERT checkpoints gives transformers' pipelines' answers
(tests/fixtures/pipeline_reference/modern_bert.json, made by
tests/fixtures/make_modern_bert_references.py on hf_tasks/modern_bert_*): text-classification
with cls and mean pooling (and a pair, a truncated long text), token-classification,
question-answering (also a context cut into strided windows), fill-mask and
feature-extraction."""

import pytest

from tests.pipelines import reference
from tests.pipelines.conftest import ids_of

FILE = "modern_bert"
KEYWORD_TASKS = ("question-answering",)  # called as pipe(question=..., context=...)


@pytest.mark.parametrize("index", reference.cases(FILE, fast={
    c["model"] for c in reference.load(FILE)["cases"]}))
def test_matches_transformers(pipelines, index):
    case = reference.load(FILE)["cases"][index]
    pipe = pipelines(case["task"], case["model"])
    if case["task"] in KEYWORD_TASKS:
        def run(inputs, options):
            return pipe(**inputs, **options)
    else:
        def run(inputs, options):
            return pipe(inputs, **options)
    reference.check(FILE, index, run, ids_of(pipe))
