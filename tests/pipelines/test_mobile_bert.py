"""MobileBERT in the pipelines: the reference cases whose outputs kbert's padded batches
change (`reference.PADDED_BATCH_DIFFERS`, strict xfails there) give transformers' answers
when each sequence is a batch of its own, as in transformers' pipeline: the labels, words,
offsets and answers are right, and the padding is the one difference."""

import pytest

from tests.pipelines import reference
from tests.pipelines.conftest import ids_of


@pytest.mark.slow
@pytest.mark.parametrize("task, index", sorted(reference.PADDED_BATCH_DIFFERS),
                         ids=[f"{t}-{i}" for t, i in sorted(reference.PADDED_BATCH_DIFFERS)])
def test_one_sequence_per_batch_gives_transformers_outputs(pipelines, task, index):
    pipe = pipelines(task.replace("_", "-"), reference.model_of(task, index))
    if task == "question_answering":
        def run(inputs, options):
            return pipe(**inputs, **options, batch_size=1)
    else:
        def run(inputs, options):
            return pipe(inputs, **options, batch_size=1)
    reference.check(task, index, run, ids_of(pipe))
