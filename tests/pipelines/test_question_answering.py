"""kbert.pipeline("question-answering") gives transformers' (4.57) answers on the fixtures'
checkpoints: lists of questions, top_k, handle_impossible_answer, max_seq_len / doc_stride
windows, max_answer_len, align_to_words, a 20,000-character context, hostile contexts, and
the same refusals (empty question, a question longer than max_seq_len)."""

import pytest

from tests.pipelines import reference
from tests.pipelines.conftest import ids_of

TASK = "question_answering"


def _answers(inputs, result):
    """(context, answer dict) of every answer of a case."""
    question, context = inputs["question"], inputs["context"]
    if isinstance(question, list):
        contexts = context if isinstance(context, list) else [context] * len(question)
        return [(c, a) for c, r in zip(contexts, result)
                for a in (r if isinstance(r, list) else [r])]
    return [(context, a) for a in (result if isinstance(result, list) else [result])]


@pytest.mark.parametrize("index", reference.cases(TASK, fast={"hf_tasks/bert_qa"}))
def test_matches_transformers(pipelines, index):
    pipe = pipelines("question-answering", reference.model_of(TASK, index))
    result = reference.check(TASK, index, lambda inputs, options: pipe(**inputs, **options),
                             ids_of(pipe))
    case = reference.load(TASK)["cases"][index]
    if "output" in case:
        for context, answer in _answers(reference.expand(TASK, case["inputs"]), result):
            assert answer["answer"] == context[answer["start"]:answer["end"]]
