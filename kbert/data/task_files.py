"""Fine-tuning data from local files, as the records every task pipeline takes.

- `read_classification_file`: CSV, TSV (GLUE's format) or JSON Lines, one example per row;
- `read_squad`: SQuAD v1.1 / v2.0 JSON.

Every problem in the data raises `DataError` (a `ValueError`) naming the file, the line (or
the question id) and what was expected; nothing is skipped silently.
"""

import csv
import json
import os

from kbert.data.task_features import DataError
from kbert.data.task_records import (
    ClassificationData,
    ClassificationExample,
    QuestionAnsweringData,
    QuestionExample,
    check_question,
    label_indices,
)

FORMATS = {".csv": "csv", ".tsv": "tsv", ".txt": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}


def _rows(path, file_format, header, delimiter, encoding):
    """(line number, {column: value}) per data row; columns are names or indices."""
    if file_format == "jsonl":
        with open(path, encoding=encoding) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as error:
                    raise DataError(f"{path}: line {number} is not valid JSON ({error}).") from None
                if not isinstance(record, dict):
                    raise DataError(f"{path}: line {number} is not a JSON object.")
                yield number, record
        return
    delimiter = delimiter or ("\t" if file_format == "tsv" else ",")
    # GLUE's TSV files hold unbalanced quotes in the text: no quoting there.
    quoting = csv.QUOTE_NONE if file_format == "tsv" else csv.QUOTE_MINIMAL
    with open(path, encoding=encoding, newline="") as f:
        reader = csv.reader(f, delimiter=delimiter, quoting=quoting)
        names = None
        for fields in reader:
            if not fields or not any(field.strip() for field in fields):
                continue
            if header and names is None:
                names = [name.strip() for name in fields]
                continue
            row = dict(enumerate(fields))
            if names is not None:
                row.update((name, fields[i]) for i, name in enumerate(names) if i < len(fields))
                row["__names__"] = names
            yield reader.line_num, row


def _field(row, column, path, number, what):
    if column in row:
        return row[column]
    names = row.get("__names__")
    if names is not None and column not in names and not isinstance(column, int):
        raise DataError(f"{path}: the header has no {what} column {column!r}; it has {names}.")
    if names is not None or isinstance(column, int):
        fields = sum(isinstance(key, int) for key in row)
        raise DataError(f"{path}: line {number} has {fields} field{'s' * (fields != 1)}; "
                        f"the {what} column {column!r} is missing.")
    raise DataError(f"{path}: line {number} has no {what} key {column!r}; it has "
                    f"{sorted(map(str, row))}.")


def read_classification_file(path, text_a_column, text_b_column=None, label_column=None, *,
                             label_names=None, regression=None, file_format=None, header=True,
                             delimiter=None, encoding="utf-8"):
    """Reads text classification (or regression) data, one example per row.

    Args:
        path: a .csv, .tsv (.txt) or .jsonl file (or say which with `file_format`).
        text_a_column, text_b_column: the text (pair) columns: header names, 0-based
            indices (CSV/TSV without header), or JSON keys. Empty text is an error.
        label_column: the label column; None for unlabelled data (prediction).
        label_names: the label order to use (e.g. the training file's); a label outside it
            is an error. Default: the file's distinct labels, sorted.
        regression: float labels; default: when every label is a number, not all integers.
        header: whether CSV/TSV files start with a header row.
    Returns:
        `ClassificationData`.
    """
    path = os.fspath(path)
    if file_format is None:
        file_format = FORMATS.get(os.path.splitext(path)[1].lower())
        if file_format is None:
            raise ValueError(f"{path}: cannot tell the format from the extension; give "
                             f"file_format='csv', 'tsv' or 'jsonl'.")
    if file_format not in ("csv", "tsv", "jsonl"):
        raise ValueError(f"Unknown file_format {file_format!r}; use 'csv', 'tsv' or 'jsonl'.")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such file: {path!r}.")
    if not header and file_format != "jsonl":
        for column in (text_a_column, text_b_column, label_column):
            if column is not None and not isinstance(column, int):
                raise ValueError(f"{path}: without a header, columns are indices; got "
                                 f"{column!r}.")
    texts, raw_labels, origins = [], [], []
    for number, row in _rows(path, file_format, header, delimiter, encoding):
        origin = f"{path}: line {number}"
        pair = []
        for column, what in ((text_a_column, "text"), (text_b_column, "second text")):
            if column is None:
                pair.append(None)
                continue
            text = _field(row, column, path, number, what)
            if not isinstance(text, str) or not text.strip():
                raise DataError(f"{origin}: empty text in column {column!r}; expected a "
                                f"non-empty string, got {text!r}.")
            pair.append(text)
        if label_column is not None:
            label = _field(row, label_column, path, number, "label")
            if label is None or (isinstance(label, str) and not label.strip()):
                raise DataError(f"{origin}: empty label in column {label_column!r}.")
            raw_labels.append(label)
        texts.append(pair)
        origins.append(origin)
    if not texts:
        raise DataError(f"{path}: no examples.")
    labels = [None] * len(texts)
    if label_column is not None:
        labels, label_names, regression = label_indices(raw_labels, origins, label_names,
                                                        regression)
    examples = [ClassificationExample(a, b, label, origin)
                for (a, b), label, origin in zip(texts, labels, origins)]
    return ClassificationData(examples, label_names, bool(regression), path)


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
