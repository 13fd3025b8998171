"""The reference comparison itself: a tokenization difference fails (it is not skipped),
and a refusal must be kbert's error for transformers' one."""

import json

import pytest

from kbert.pipelines import InputTooLongError
from tests.pipelines import reference

TASK = "text_classification"
MODEL = "hf_tasks/bert_seq_single"


def _index(error):
    for i, case in enumerate(reference.load(TASK)["cases"]):
        if case["model"] == MODEL and ("error" in case) == error:
            return i
    raise AssertionError(MODEL)


def _raise(error):
    def run(inputs, options):
        raise error
    return run


def test_an_unlisted_tokenization_difference_fails():
    index = _index(error=False)
    with pytest.raises(AssertionError, match="otherwise than transformers' tokenizer of "
                                             f"{MODEL}"):
        reference.check(TASK, index, _raise(AssertionError("not run")),
                        lambda text: [0, 1, 2])


def test_a_refusal_must_be_the_expected_error():
    index = _index(error=True)  # a text over the 128 positions: transformers' RuntimeError
    assert reference.load(TASK)["cases"][index]["error"]["type"] == "RuntimeError"
    with pytest.raises(AssertionError, match="does not say 'tokens long; the model takes"):
        reference.check(TASK, index, _raise(InputTooLongError("too long")), None)
    with pytest.raises(KeyError):  # not the InputTooLongError expected: it is not caught
        reference.check(TASK, index, _raise(KeyError("text")), None)
    reference.check(TASK, index, _raise(InputTooLongError(
        "Text 0 is 4228 tokens long; the model takes at most 128.")), None)
    with pytest.raises(AssertionError, match="No kbert error is known"):
        reference.expected_error({"type": "OSError", "message": "disk full"})


@pytest.mark.parametrize("task, model", [("token_classification", "hf_tasks/roberta_token"),
                                         ("question_answering", "hf_tasks/roberta_qa")])
def test_roberta_has_the_cases_of_the_tasks_that_point_into_the_text(task, model):
    """RoBERTa's byte-level offsets are checked on the shared hostile inputs (CJK, emoji,
    whitespace runs, the long text): its cases are there, most of them with answers."""
    cases = [c for c in reference.load(task)["cases"] if c["model"] == model]
    text = json.dumps([c["inputs"] for c in cases], ensure_ascii=False)
    assert len(cases) >= 8 and sum("output" in c for c in cases) >= 8
    for hostile in ("東京", "🍕", "\\t\\n", "@long"):
        assert hostile in text, hostile


@pytest.mark.parametrize("task, prefixes", [
    ("fill_mask", ("hf_tiny/distil_bert", "hf_tiny/electra", "hf_tiny/albert",
                   "hf_tiny/roberta", "hf_tiny/mobile_bert", "hf_tiny/deberta_v3")),
    ("feature_extraction", ("hf_tasks/bert_", "hf_tasks/distil_bert_", "hf_tasks/albert_",
                            "hf_tasks/roberta_", "hf_tasks/electra_", "hf_tasks/mobile_bert_",
                            "hf_tasks/deberta_v3_"))])
def test_every_family_has_compared_cases(task, prefixes):
    """Each family's checkpoint has answered cases in the task's reference, and in
    feature-extraction the 20,000-character text among its inputs."""
    cases = reference.load(task)["cases"]
    for prefix in prefixes:
        ours = [c for c in cases if c["model"].startswith(prefix)]
        assert sum("output" in c for c in ours) >= 2, prefix
        if task == "feature_extraction":
            assert any(c["inputs"] == "@long" for c in ours), prefix
