"""SQuAD readers (kbert.tasks.question_answering.data): JSON files and TFDS."""

import json

import numpy as np
import pytest

from kbert.tasks.question_answering.data import read_squad, tfds_squad
from tests.tasks.text_classification.test_readers import _mocked, error_naming, write


def squad_json(qas, context="Paris is the capital of France.", version=None):
    data = {"data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}
    if version:
        data["version"] = version
    return json.dumps(data)


def test_read_squad_v1_and_v2(tmp_path):
    qas = [{"id": "a", "question": "What is the capital?",
            "answers": [{"text": "Paris", "answer_start": 0},
                        {"text": "Paris is", "answer_start": 0}]}]
    data = read_squad(write(tmp_path / "v1.json", squad_json(qas)))
    assert not data.version_2
    (example,) = data.examples
    assert example.answers == (("Paris", 0), ("Paris is", 0)) and not example.is_impossible
    qas.append({"id": "b", "question": "Who?", "answers": [], "is_impossible": True,
                "plausible_answers": [{"text": "France", "answer_start": 24}]})
    data = read_squad(write(tmp_path / "v2.json", squad_json(qas)))
    assert data.version_2 and data.examples[1].is_impossible and data.examples[1].answers == ()


@pytest.mark.parametrize("answer, message", [
    ({"text": "Paris", "answer_start": 1}, "does not match the context at answer_start 1"),
    ({"text": "France.", "answer_start": 30}, "outside its context of 31 characters"),
    ({"text": "Paris", "answer_start": -1}, "outside its context"),
    ({"text": "", "answer_start": 0}, "empty text"),
    ({"text": "Paris", "answer_start": "0"}, "expected an integer"),
])
def test_squad_errors_name_file_and_question(tmp_path, answer, message):
    path = write(tmp_path / "bad.json",
                 squad_json([{"id": "q-17", "question": "Capital?", "answers": [answer]}]))
    with error_naming(path, "question id 'q-17'", message):
        read_squad(path)


def test_squad_empty_question_and_duplicate_ids(tmp_path):
    path = write(tmp_path / "bad.json", squad_json([{"id": "x", "question": " ", "answers": []}]))
    with error_naming(path, "'x'", "empty question"):
        read_squad(path)
    qas = [{"id": "x", "question": "Q?", "answers": []}] * 2
    path = write(tmp_path / "twice.json", squad_json(qas))
    with error_naming(path, "'x'", "twice"):
        read_squad(path)


def test_tfds_squad():
    context = "Le café de Zoë est à Paris."
    rows = [{"id": "q1", "title": "t", "context": context, "question": "Où?",
             "answers": {"text": ["Paris"], "answer_start": np.array([21], np.int32)}}]
    with _mocked(rows):
        data = tfds_squad("squad/v1.1", split="validation")
    assert not data.version_2
    assert [(e.id, e.context, e.answers) for e in data.examples] == [
        ("q1", context, (("Paris", 21),))]
    rows = [dict(rows[0], is_impossible=False, plausible_answers=rows[0]["answers"]),
            dict(rows[0], id="q2", is_impossible=True,
                 answers={"text": np.array([], object), "answer_start": np.zeros([0], np.int32)},
                 plausible_answers=rows[0]["answers"])]
    with _mocked(rows):
        data = tfds_squad("squad/v2.0")
    assert data.version_2 and [e.is_impossible for e in data.examples] == [False, True]
    rows[0]["answers"] = {"text": ["Paris"], "answer_start": np.array([3], np.int32)}
    with _mocked(rows), error_naming("squad/v2.0 (train)", "question id 'q1'", "does not match"):
        tfds_squad("squad/v2.0")
