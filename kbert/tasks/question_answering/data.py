"""Extractive question answering's data: the records (`QuestionExample`,
`QuestionAnsweringData`, `check_question`) and their readers, SQuAD v1.1 / v2.0 JSON files
(`read_squad`) and the TFDS datasets squad/v1.1 and squad/v2.0 (`tfds_squad`).

Every problem in the data raises `DataError` (a `ValueError`) naming the file or dataset and
the question id; nothing is skipped silently. Windows and labels are `features.py`'s.
"""

import dataclasses
import json
import os

from kbert.tasks.datasets import DataError, TfdsTask, builder_rows
from kbert.tasks.datasets import text as _text  # TFDS bytes -> str

# The TFDS builders of SQuAD: question, context, answers {text, answer_start} (and id, v2's
# is_impossible).
TFDS_TASKS = {name: TfdsTask("question_answering", "question", "context", "answers")
              for name in ("squad/v1.1", "squad/v2.0")}
TFDS_NAMES = tuple(TFDS_TASKS)


@dataclasses.dataclass(frozen=True)
class QuestionExample:
    """A SQuAD question: `answers` are (text, char_start) pairs into `context`, checked to
    match it; `is_impossible` (SQuAD 2.0) means no answer."""
    id: str
    question: str
    context: str
    answers: tuple = ()
    is_impossible: bool = False
    origin: str = ""


@dataclasses.dataclass
class QuestionAnsweringData:
    examples: list
    version_2: bool = False
    source: str = ""


def check_question(example, where):
    """Raises `DataError` for an empty question or context, or an answer whose text is not
    at its `answer_start` in the context."""
    prefix = f"{where}: question id {example.id!r}"
    if not isinstance(example.question, str) or not example.question.strip():
        raise DataError(f"{prefix}: empty question.")
    if not isinstance(example.context, str) or not example.context.strip():
        raise DataError(f"{prefix}: empty context.")
    for i, (text, start) in enumerate(example.answers):
        if not isinstance(text, str) or not text.strip():
            raise DataError(f"{prefix}: answer {i} has empty text.")
        if isinstance(start, bool) or not isinstance(start, int):
            raise DataError(f"{prefix}: answer {i} has answer_start {start!r}; expected an "
                            f"integer.")
        end = start + len(text)
        if start < 0 or end > len(example.context):
            raise DataError(f"{prefix}: answer {i} {text!r} spans characters {start}:{end}, "
                            f"outside its context of {len(example.context)} characters.")
        if example.context[start:end] != text:
            raise DataError(f"{prefix}: answer {i} {text!r} does not match the context at "
                            f"answer_start {start}, which holds "
                            f"{example.context[start:end]!r}.")


def read(spec, split="train"):
    """'tfds:squad/v1.1' or 'tfds:squad/v2.0' (at `split`), or a SQuAD JSON file ->
    `QuestionAnsweringData`."""
    if spec.startswith("tfds:"):
        return tfds_squad(spec.removeprefix("tfds:"), split=split)
    return read_squad(spec)


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


def tfds_squad(name, split="train", data_dir=None, download=True):
    """Reads squad/v1.1 or squad/v2.0 from tensorflow-datasets (features id, question,
    context, answers {text, answer_start}, and v2's is_impossible) as
    `QuestionAnsweringData`; `data_dir`, `download` as `kbert.tasks.datasets.builder_rows`."""
    if name not in TFDS_NAMES:
        raise ValueError(f"Unknown SQuAD dataset {name!r}; kbert reads {list(TFDS_NAMES)}.")
    _, question, context, answer = TFDS_TASKS[name]
    rows, _, where = builder_rows(name, TFDS_TASKS[name], split, data_dir, download)
    examples = []
    for row in rows:
        answers = row[answer]
        pairs = tuple((_text(t), int(s)) for t, s in zip(answers["text"],
                                                          answers["answer_start"]))
        impossible = bool(row.get("is_impossible", False))
        qid = _text(row["id"])
        example = QuestionExample(qid, _text(row[question]), _text(row[context]),
                                  () if impossible else pairs, impossible,
                                  f"{where} question id {qid!r}")
        check_question(example, where)
        examples.append(example)
    if not examples:
        raise DataError(f"{where}: no questions.")
    return QuestionAnsweringData(examples, name == "squad/v2.0", where)
