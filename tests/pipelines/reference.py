"""The stored outputs of transformers' pipelines (tests/fixtures/pipeline_reference/, made by
tests/fixtures/make_pipeline_reference.py) and how kbert's are compared with them."""

import functools
import json
import math
from pathlib import Path

import pytest

from tests.fixtures import pipeline_inputs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TOLERANCE = 1e-4


@functools.lru_cache(maxsize=None)
def load(task):
    with open(FIXTURES / "pipeline_reference" / f"{task}.json", encoding="utf-8") as f:
        return json.load(f)


# Known differences of kbert's pipelines from transformers' on the fixtures, each with its
# reason: their cases are strict xfails (a fix makes them pass, and then fail until they are taken
# off these lists). (task, case index) -> the case's model.

# A divergence by design, not a bug: transformers' DeBERTa has no absolute positions and
# runs a text of any length (here 5,921 tokens past max_position_embeddings=128), far past
# the lengths the model was trained on and its relative-position buckets tell apart; kbert
# holds every model, DeBERTa-v3 too, to its config's max_sequence_length, and an untruncated
# longer text is an InputTooLongError that names its length (as for every other family,
# where transformers fails inside torch: reference.ERRORS).
LONGER_THAN_POSITIONS = {("text_classification", 110): "hf_tasks/deberta_v3_seq_single"}
_KNOWN = [
    (LONGER_THAN_POSITIONS, ValueError,
     "DeBERTa-v3, by design: transformers runs texts past max_position_embeddings (no "
     "absolute positions); kbert holds every model to its max_sequence_length and refuses a "
     "longer untruncated text with InputTooLongError (reference.LONGER_THAN_POSITIONS)"),
]


def cases(task, fast=()):
    """pytest params of the task's cases, with readable ids; the cases of models not in
    `fast` are marked slow (the fast tier runs one checkpoint per task), the known
    differences (`_KNOWN`) strict xfails."""
    out = []
    for i, case in enumerate(load(task)["cases"]):
        inputs = json.dumps(case["inputs"], ensure_ascii=True)[:30]
        marks = () if case["model"] in fast else (pytest.mark.slow,)
        for listed, error, reason in _KNOWN:
            if (task, i) in listed:
                assert listed[task, i] == case["model"], (
                    f"{task} case {i} is {case['model']}'s: {reason} is stale")
                marks += (pytest.mark.xfail(strict=True, raises=error, reason=reason),)
        out.append(pytest.param(i, id=f"{case['model'].split('/')[-1]}-{i}-{inputs}",
                                marks=marks))
    return out


def model_of(task, index):
    return load(task)["cases"][index]["model"]


def expand(task, value):
    """The case's inputs, "@long" replaced by the 20,000-character text."""
    return pipeline_inputs.expand(value, load(task)["long_text"])


def assert_same(ours, theirs, path="output", tolerance=TOLERANCE):
    """Equal structure, keys, strings and integers; floats within `tolerance`."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), f"{path}: {ours!r:.200} is no dict"
        assert list(ours) == list(theirs), f"{path}: keys {list(ours)} != {list(theirs)}"
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{path}.{key}", tolerance)
    elif isinstance(theirs, list):
        assert isinstance(ours, list), f"{path}: {ours!r:.200} is no list"
        assert len(ours) == len(theirs), (
            f"{path}: {len(ours)} items != {len(theirs)}:\n{ours!r:.600}\n{theirs!r:.600}")
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{path}[{i}]", tolerance)
    elif isinstance(theirs, float):
        assert isinstance(ours, (float, int)) and not isinstance(ours, bool), \
            f"{path}: {ours!r} is no number"
        assert math.isclose(ours, theirs, rel_tol=0, abs_tol=tolerance), \
            f"{path}: {ours!r} != {theirs!r}"
    else:
        assert ours == theirs and type(ours) is type(theirs), f"{path}: {ours!r} != {theirs!r}"


# transformers' error (type, start of its message) -> kbert's (class, a phrase of its
# message): the refusal an input must get. transformers fails on a text longer than the
# position table inside torch (BERT: the segment buffer; RoBERTa: the positions it derives
# from the pad id); kbert names the length.
ERRORS = [
    ("RuntimeError", "The size of tensor a", "InputTooLongError",
     "tokens long; the model takes at most"),
    ("RuntimeError", "The expanded size of the tensor", "InputTooLongError",  # RoBERTa's
     "tokens long; the model takes at most"),
    ("Exception", "Truncation error: Sequence to truncate too short", "InputTooLongError",
     "leaves no room for the context"),
    ("ValueError", "`context` cannot be empty", "ValueError", "`context` cannot be empty"),
    ("ValueError", "`question` cannot be empty", "ValueError", "`question` cannot be empty"),
    ("ValueError", "`doc_stride` (200) is larger than `max_seq_len` (64)", "ValueError",
     "`doc_stride` (200) is larger than `max_seq_len` (64)"),
    ("ValueError", "The provided hypothesis_template", "ValueError",
     "was not able to be formatted with the target labels"),
    ("ValueError", "You must include at least one label and at least one sequence.",
     "ValueError", "You must include at least one label and at least one sequence."),
    ("ValueError", "At least one input is required.", "ValueError",
     "At least one input is required."),
    ("ValueError", "truncation parameter defined twice", "ValueError",
     "truncation parameter defined twice"),
    ("PipelineException", "No mask_token ([MASK]) found on the input", "ValueError",
     "No mask_token ([MASK]) found"),
    ("PipelineException", "No mask_token (<mask>) found on the input", "ValueError",
     "No mask_token (<mask>) found"),
]


def expected_error(recorded):
    """kbert's (exception class, phrase) for the error the reference recorded."""
    from kbert.pipelines import InputTooLongError

    classes = {"InputTooLongError": InputTooLongError, "ValueError": ValueError}
    for theirs, start, ours, phrase in ERRORS:
        if recorded["type"] == theirs and recorded["message"].startswith(start):
            return classes[ours], phrase
    raise AssertionError(f"No kbert error is known for transformers' {recorded}: add it to "
                         "tests/pipelines/reference.ERRORS.")


def check(task, index, run, tokenizer_ids):
    """Runs case `index` through `run(inputs, options)` and compares the result (or the
    error: `expected_error`) with the reference.

    `tokenizer_ids(text)` gives kbert's ids (with [CLS] / [SEP]); they must be the
    reference's on every text of the case (ALBERT's references are its slow tokenizer's
    ids: tests/fixtures/make_pipeline_reference.load).
    """
    reference = load(task)
    case = reference["cases"][index]
    inputs = expand(task, case["inputs"])
    known = reference["input_ids"][case["model"]]
    for text in pipeline_inputs.texts_of(inputs):
        if text in known:
            ours = list(tokenizer_ids(text))
            assert ours == known[text], (
                f"kbert tokenizes {text!r} otherwise than transformers' tokenizer of "
                f"{case['model']}: {ours} != {known[text]}")
    if "error" in case:
        cls, phrase = expected_error(case["error"])
        with pytest.raises(cls) as caught:
            run(inputs, case["options"])
        assert phrase in str(caught.value), (
            f"{type(caught.value).__name__}: {caught.value} does not say {phrase!r} (as "
            f"transformers' {case['error']['type']}: {case['error']['message']})")
        return caught.value
    ours = run(inputs, case["options"])
    assert_same(ours, case["output"])
    return ours
