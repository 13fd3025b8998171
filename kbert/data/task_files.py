"""Fine-tuning data from local files, as the records every task pipeline takes.

- `read_conll`: CoNLL column files (a word per line, a blank line between sentences);
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
    TaggingData,
    TaggingExample,
    check_question,
    label_indices,
)


def read_conll(path, word_column=0, tag_column=-1, *, label_names=None, separator=None,
               encoding="utf-8"):
    """Reads a CoNLL column file: a word per line, a blank line between sentences.

    `-DOCSTART-` lines are skipped. Every line has the first word line's number of columns
    (fields split on `separator`, default any whitespace). `tag_column=None` reads words
    only. Tags become indices into `label_names` (default: the distinct tags, sorted).
    Returns `TaggingData`.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such file: {path!r}.")
    sentences, columns, first_line = [], None, None
    words, tags, start = [], [], None

    def close():
        nonlocal words, tags
        if words:
            sentences.append((words, tags, start))
        words, tags = [], []

    with open(path, encoding=encoding) as f:
        for number, line in enumerate(f, 1):
            fields = line.rstrip("\r\n").split(separator)
            if not line.strip() or fields[0] == "-DOCSTART-":
                close()
                continue
            if columns is None:
                columns, first_line = len(fields), number
                for column in (word_column, tag_column):
                    if column is not None and not -columns <= column < columns:
                        raise DataError(f"{path}: line {number} has {columns} columns; there "
                                        f"is no column {column}.")
            elif len(fields) != columns:
                raise DataError(f"{path}: line {number} has {len(fields)} columns; expected "
                                f"{columns} (as line {first_line}): {line.rstrip()!r}.")
            if not words:
                start = number
            words.append(fields[word_column])
            tags.append(None if tag_column is None else fields[tag_column].strip())
            if not words[-1].strip():
                raise DataError(f"{path}: line {number}: empty word in column {word_column}.")
    close()
    if not sentences:
        raise DataError(f"{path}: no sentences.")
    origins = [f"{path}: line {start}" for _, _, start in sentences]
    if tag_column is None:
        return TaggingData([TaggingExample(tuple(w), None, o)
                            for (w, _, _), o in zip(sentences, origins)], label_names, path)
    flat_origins = [f"{path}: line {start + i}" for _, t, start in sentences
                    for i in range(len(t))]
    flat, label_names, _ = label_indices([t for _, ts, _ in sentences for t in ts],
                                         flat_origins, label_names, regression=False)
    examples, position = [], 0
    for (w, _, _), origin in zip(sentences, origins):
        examples.append(TaggingExample(tuple(w), tuple(flat[position : position + len(w)]),
                                       origin))
        position += len(w)
    return TaggingData(examples, label_names, path)


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
