"""Fine-tuning data from local files, as the records every task pipeline takes.

- `read_squad`: SQuAD v1.1 / v2.0 JSON.

Every problem in the data raises `DataError` (a `ValueError`) naming the file, the line (or
the question id) and what was expected; nothing is skipped silently.
"""

import json
import os

from kbert.data.task_features import DataError
from kbert.data.task_records import (
    QuestionAnsweringData,
    QuestionExample,
    check_question,
)


def read_squad(path, version_2=None, encoding="utf-8"):
    """Reads SQuAD v1.1 / v2.0 JSON (`{"data": [{"paragraphs": [{"context", "qas"}]}]}`).

    `version_2=None`: v2 when the file says "version": "v2.0" or any question has
    `is_impossible`. Returns `QuestionAnsweringData`.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such file: {path!r}.")
    with open(path, encoding=encoding) as f:
        try:
            squad = json.load(f)
        except json.JSONDecodeError as error:
            raise DataError(f"{path}: not valid JSON ({error}).") from None
    if not isinstance(squad, dict) or not isinstance(squad.get("data"), list):
        raise DataError(f"{path}: expected SQuAD JSON, an object with a 'data' list.")
    examples, seen, any_impossible = [], set(), False
    for a, article in enumerate(squad["data"]):
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            context = paragraph.get("context")
            for q, qa in enumerate(paragraph.get("qas", [])):
                qid = str(qa.get("id", f"data[{a}].paragraphs[{p}].qas[{q}]"))
                if qid in seen:
                    raise DataError(f"{path}: question id {qid!r} appears twice.")
                seen.add(qid)
                impossible = bool(qa.get("is_impossible", False))
                any_impossible = any_impossible or "is_impossible" in qa
                answers = []
                for answer in [] if impossible else qa.get("answers", []):
                    if not isinstance(answer, dict) or "text" not in answer:
                        raise DataError(f"{path}: question id {qid!r}: an answer lacks its "
                                        f"'text' or 'answer_start'.")
                    answers.append((answer["text"], answer.get("answer_start")))
                example = QuestionExample(qid, qa.get("question"), context, tuple(answers),
                                          impossible, f"{path}: question id {qid!r}")
                check_question(example, path)
                examples.append(example)
    if not examples:
        raise DataError(f"{path}: no questions.")
    if version_2 is None:
        version_2 = str(squad.get("version", "")).startswith("v2") or any_impossible
    return QuestionAnsweringData(examples, bool(version_2), path)
