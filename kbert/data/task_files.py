"""Fine-tuning data from local files, as the records every task pipeline takes.

- `read_classification_file`: CSV, TSV (GLUE's format) or JSON Lines, one example per row;
- `read_conll`: CoNLL column files (a word per line, a blank line between sentences);

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
    TaggingData,
    TaggingExample,
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

