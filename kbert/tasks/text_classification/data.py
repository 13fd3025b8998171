"""Text classification data in: the records (`ClassificationExample`, `ClassificationData`)
and their readers.

- `read_classification_file`: CSV, TSV (GLUE's format) or JSON Lines, one example per row;
- `read_tfds`: GLUE from tensorflow-datasets (glue/sst2, glue/cola: sentence, label;
  glue/mrpc, glue/stsb: sentence1, sentence2, label (stsb: float32, regression); glue/mnli:
  premise, hypothesis, label, where the split "validation" means validation_matched).
  Label names come from the builders' ClassLabel features. GLUE's test splits have no labels
  (-1): their records have `label=None`.

Labels are stored as indices into the data's `label_names` (floats for regression); every
problem in the data raises `DataError` (a `ValueError`) naming the file and the line (or the
TFDS example) and what was expected; nothing is skipped silently. The features and batches
for a model are `kbert.tasks.text_classification.features`.
"""

import csv
import dataclasses
import json
import os
from typing import Optional

from kbert.tasks.datasets import DataError, TfdsTask, builder_rows, label_indices
from kbert.tasks.datasets import text as _text  # TFDS bytes -> str


@dataclasses.dataclass(frozen=True)
class ClassificationExample:
    """One text (or text pair); `label` is an index into `label_names`, a float for
    regression, or None (unlabelled data); `origin` says where it came from."""
    text_a: str
    text_b: Optional[str] = None
    label: object = None
    origin: str = ""


@dataclasses.dataclass
class ClassificationData:
    """Examples, `label_names` (None for regression or unlabelled data) and `regression`."""
    examples: list
    label_names: Optional[list] = None
    regression: bool = False
    source: str = ""


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


TFDS_TASKS = {
    "glue/sst2": TfdsTask("classification", "sentence", None, "label"),
    "glue/cola": TfdsTask("classification", "sentence", None, "label"),
    "glue/mrpc": TfdsTask("classification", "sentence1", "sentence2", "label"),
    "glue/mnli": TfdsTask("classification", "premise", "hypothesis", "label"),
    "glue/stsb": TfdsTask("regression", "sentence1", "sentence2", "label"),
}
_SPLIT_ALIASES = {"glue/mnli": {"validation": "validation_matched", "test": "test_matched"}}


def read_tfds(name, split="train", data_dir=None, download=True):
    """Reads a GLUE task from tensorflow-datasets (see the module's docstring).

    Args:
        name: one of `TFDS_TASKS` ("glue/sst2", "glue/mnli", "glue/stsb", ...).
        split: a TFDS split; for glue/mnli, "validation" and "test" mean the matched ones.
        data_dir, download: as `tfds.builder` / `download_and_prepare`.
    Returns:
        `ClassificationData`.
    """
    if name not in TFDS_TASKS:
        raise ValueError(f"Unknown TFDS task {name!r}; kbert reads {sorted(TFDS_TASKS)} for "
                         "text classification.")
    task = TFDS_TASKS[name]
    split = _SPLIT_ALIASES.get(name, {}).get(split, split)
    rows, features, where = builder_rows(name, task, split, data_dir, download)
    names = None if task.kind == "regression" else list(features[task.label].names)
    return _examples(rows, where, task.text_a, task.text_b, task.label, names)


def _examples(rows, where, text_a, text_b, label, names):
    examples = []
    for i, row in enumerate(rows):
        origin = f"{where} example {i}"
        texts = []
        for key in (text_a, text_b):
            text = None if key is None else _text(row[key])
            if key is not None and not text.strip():
                raise DataError(f"{origin}: empty text in feature {key!r}.")
            texts.append(text)
        value = row[label]
        if names is None:
            value = float(value)
        else:
            value = int(value)
            if value == -1:  # GLUE's test splits
                value = None
            elif not 0 <= value < len(names):
                raise DataError(f"{origin}: label {value} is outside the {len(names)} "
                                f"labels {names}.")
        examples.append(ClassificationExample(texts[0], texts[1], value, origin))
    if not examples:
        raise DataError(f"{where}: no examples.")
    return ClassificationData(examples, names, names is None, where)
