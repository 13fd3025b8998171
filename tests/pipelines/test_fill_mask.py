"""kbert.pipeline("fill-mask") gives transformers' tokens, scores and decoded sequences on
masked-LM checkpoints (DistilBERT, the ELECTRA generator, ALBERT, RoBERTa, MobileBERT,
DeBERTa-v3): top_k, targets (also words that are no token), several masks, and the refusal of
a text without a mask."""

import pytest

from tests.pipelines import reference
from tests.pipelines.conftest import ids_of

TASK = "fill_mask"


@pytest.mark.parametrize("index", reference.cases(TASK, fast={"hf_tiny/distil_bert",
                                                                 "hf_tiny/roberta"}))
def test_matches_transformers(pipelines, index):
    pipe = pipelines("fill-mask", reference.model_of(TASK, index))
    reference.check(TASK, index, lambda inputs, options: pipe(inputs, **options), ids_of(pipe))
