"""The stored outputs of transformers' pipelines (tests/fixtures/pipeline_reference/, made by
tests/fixtures/make_pipeline_reference.py) and how kbert's are compared with them."""

import functools
import json
import math
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TOLERANCE = 1e-4


@functools.lru_cache(maxsize=None)
def load(task):
    with open(FIXTURES / "pipeline_reference" / f"{task}.json", encoding="utf-8") as f:
        return json.load(f)


def cases(task, fast=()):
    """pytest params of the task's cases, with readable ids; the cases of models not in
    `fast` are marked slow (the fast tier runs one checkpoint per task)."""
    out = []
    for i, case in enumerate(load(task)["cases"]):
        inputs = json.dumps(case["inputs"], ensure_ascii=True)[:30]
        marks = () if case["model"] in fast else (pytest.mark.slow,)
        out.append(pytest.param(i, id=f"{case['model'].split('/')[-1]}-{i}-{inputs}",
                                marks=marks))
    return out


def model_of(task, index):
    return load(task)["cases"][index]["model"]


def expand(task, value):
    """The case's inputs, "@long" replaced by the 20,000-character text."""
    if value == "@long":
        return load(task)["long_text"]
    if isinstance(value, list):
        return [expand(task, v) for v in value]
    if isinstance(value, dict):
        return {k: expand(task, v) for k, v in value.items()}
    return value


def texts_of(inputs):
    if isinstance(inputs, str):
        return [inputs]
    if isinstance(inputs, dict):
        return [v for v in inputs.values() if isinstance(v, str)] + [
            t for v in inputs.values() if isinstance(v, list) for t in v]
    return [t for item in inputs for t in texts_of(item)]


def assert_same(ours, theirs, path="output"):
    """Equal structure, keys, strings and integers; floats within `TOLERANCE`."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), f"{path}: {ours!r:.200} is no dict"
        assert list(ours) == list(theirs), f"{path}: keys {list(ours)} != {list(theirs)}"
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{path}.{key}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list), f"{path}: {ours!r:.200} is no list"
        assert len(ours) == len(theirs), (
            f"{path}: {len(ours)} items != {len(theirs)}:\n{ours!r:.600}\n{theirs!r:.600}")
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{path}[{i}]")
    elif isinstance(theirs, float):
        assert isinstance(ours, (float, int)) and not isinstance(ours, bool), \
            f"{path}: {ours!r} is no number"
        assert math.isclose(ours, theirs, rel_tol=0, abs_tol=TOLERANCE), \
            f"{path}: {ours!r} != {theirs!r}"
    else:
        assert ours == theirs and type(ours) is type(theirs), f"{path}: {ours!r} != {theirs!r}"


def check(task, index, run, tokenizer_ids):
    """Runs case `index` through `run(inputs, options)` and compares the result (or the
    error) with the reference.

    `tokenizer_ids(text)` gives kbert's ids (with [CLS] / [SEP]); a case whose texts kbert
    tokenizes otherwise than transformers' fast tokenizer (only ALBERT's whitespace may
    differ: see test_tokenization_divergence) runs without comparison and is skipped.
    """
    reference = load(task)
    case = reference["cases"][index]
    inputs = expand(task, case["inputs"])
    known = reference["input_ids"][case["model"]]
    for text in texts_of(inputs):
        if text in known and list(tokenizer_ids(text)) != known[text]:
            try:  # no comparison, but no crash either: a result or a clear error
                run(inputs, case["options"])
            except ValueError as error:
                assert str(error)
            pytest.skip(f"kbert tokenizes {text!r} otherwise than transformers' fast "
                        "tokenizer (see test_tokenization_divergence)")
    if "error" in case:
        with pytest.raises((ValueError, KeyError, TypeError)) as caught:
            run(inputs, case["options"])
        assert str(caught.value), "an error must say what is wrong"
        return caught.value
    ours = run(inputs, case["options"])
    assert_same(ours, case["output"])
    return ours
