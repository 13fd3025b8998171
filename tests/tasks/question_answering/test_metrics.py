"""SQuAD exact match and F1 (kbert.tasks.question_answering.metrics) against hand-worked
cases of the official evaluate scripts' normalisation."""

import ast
from pathlib import Path

import pytest

from kbert.tasks.question_answering import metrics

ROOT = Path(__file__).resolve().parents[3]


def test_normalize_answer():
    assert metrics.normalize_answer("  The Quick,  brown FOX! ") == "quick brown fox"
    assert metrics.normalize_answer("U.S.A.") == "usa"
    assert metrics.normalize_answer("another theater, an apple") == "another theater apple"
    assert metrics.normalize_answer("café — naïve") == "café — naïve"  # ASCII punctuation only


def test_squad_v1_exact_match_and_f1():
    assert metrics.squad_exact_match("the Eiffel Tower", ["Eiffel Tower", "tower"]) == 1.0
    assert metrics.squad_exact_match("Eiffel", ["Eiffel Tower"]) == 0.0
    # [in, city, of, paris] vs [paris, france]: 1 in common, P 1/4, R 1/2.
    assert metrics.squad_f1("in the city of Paris", ["Paris, France"]) == pytest.approx(1 / 3)
    assert metrics.squad_f1("Paris", ["Paris, France", "paris"]) == 1.0  # max over the golds
    assert metrics.squad_f1("the cat cat cat", ["a cat"]) == pytest.approx(0.5)  # P 1/3, R 1
    assert metrics.squad_f1("", ["Paris"]) == 0.0
    assert metrics.squad_f1("the", ["a"]) == 0.0  # v1.1: nothing in common is 0
    predictions = {"q1": "Denver Broncos", "q2": "in the city of Paris", "q3": "no"}
    references = {"q1": ["Denver Broncos", "The Broncos"], "q2": ["Paris, France"],
                  "q3": ["yes"], "q4": ["unanswered"]}  # q4: no prediction, scores 0
    scores = metrics.squad_scores(predictions, references)
    assert scores == {"exact_match": pytest.approx(25.0), "f1": pytest.approx(100 * (4 / 3) / 4)}


def test_squad_v2_no_answer():
    v2 = "v2.0"
    assert metrics.squad_exact_match("", [], v2) == 1.0  # unanswerable, no answer given
    assert metrics.squad_f1("", [], v2) == 1.0
    assert metrics.squad_f1("Paris", [], v2) == 0.0
    assert metrics.squad_f1("", ["Paris"], v2) == 0.0
    assert metrics.squad_f1("", ["The", "a."], v2) == 1.0  # golds that normalize to ""
    assert metrics.squad_f1("the", ["Paris"], v2) == 0.0
    scores = metrics.squad_scores({"a": "", "b": "Paris", "c": "Rome"},
                                  {"a": [], "b": [], "c": ["Rome"]}, version=v2)
    assert scores == {"exact_match": pytest.approx(200 / 3), "f1": pytest.approx(200 / 3)}
    with pytest.raises(ValueError, match="No prediction for 1 questions"):
        metrics.squad_scores({"a": ""}, {"a": [], "b": ["x"]}, version=v2)
    with pytest.raises(ValueError, match="Unknown SQuAD version 'v3'"):
        metrics.squad_f1("a", ["a"], version="v3")


def test_squad_metrics_need_no_tensorflow():
    """The official scripts' rules, on the standard library and numpy alone."""
    tree = ast.parse((ROOT / "kbert" / "tasks" / "question_answering" / "metrics.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert imported == {"collections", "re", "string", "numpy"}
