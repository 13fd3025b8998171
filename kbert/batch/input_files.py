"""The records of a batch-prediction input file, as the pipeline of a task takes them.

Formats (`FORMATS`; "auto" tells them by the extension, `EXTENSIONS`):

- csv: a header row naming the columns, then one record per row (quoted fields may span
  lines); a row with another number of fields than the header is an error;
- tsv: the same with tabs and no quoting (GLUE's files hold unbalanced quotes);
- jsonl: one JSON object per line, the columns its keys;
- text: one text per line, the whole line (less its line break) the text;
- tfrecord: one tf.train.Example per record, the columns its features (a text: a bytes
  feature of one UTF-8 value); its records are numbered in place of lines.
Blank lines hold no record in any format (a CSV row of empty fields is a record).

Each record is numbered twice: `row`, its 1-based place among the records (what the output
file's lines count), and `line`, the file line it starts on (1-based; a CSV/TSV header is
line 1), which every error names. Reading is a generator, so a file of any size streams;
`scan` reads it once to check every record and count them before any model is loaded.
"""

import csv
import json
import os

FORMATS = ("csv", "tsv", "jsonl", "text", "tfrecord")
EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".txt": "text",
              ".text": "text", ".tfrecord": "tfrecord", ".tfrecords": "tfrecord"}
# The tasks whose input is one text (the others: text pairs, question-answering).
SINGLE_TEXT = ("token-classification", "zero-shot-classification", "feature-extraction",
               "sentence-embeddings", "fill-mask")


class InputFileError(ValueError):
    """A record the pipeline cannot take; the message names the file and the line."""


class Columns:
    """Where a task's input is in a record: `fields` maps the pipeline's input keys to column
    names ({"text": "review"}, {"question": "q", "context": "c"}); a single text
    (`single`) is handed to the pipeline as a string, else as that dict."""

    def __init__(self, task, text="text", text_pair=None, question="question",
                 context="context"):
        if task == "question-answering":
            self.fields = {"question": question, "context": context}
        elif task == "text-classification" and text_pair:
            self.fields = {"text": text, "text_pair": text_pair}
        else:
            self.fields = {"text": text}
        self.single = list(self.fields) == ["text"]

    def input(self, record, where):
        """The pipeline input of `record` ({column: value}); `where` names it in errors."""
        values = {}
        for key, column in self.fields.items():
            if column not in record:
                raise InputFileError(f"{where} has no {column!r} ({key}); it has "
                                     f"{', '.join(map(repr, record)) or 'nothing'}.")
            value = record[column]
            if not isinstance(value, str):
                raise InputFileError(f"{where}: {column!r} ({key}) must be a string, got "
                                     f"{json.dumps(value)[:80]}.")
            values[key] = value
        return values["text"] if self.single else values


def resolve_format(path, input_format="auto"):
    """The format of `path`: `input_format`, or from its extension for "auto"."""
    if input_format != "auto":
        if input_format not in FORMATS:
            raise ValueError(f"Unknown input format {input_format!r}. Allowed: auto, "
                             f"{', '.join(FORMATS)}.")
        return input_format
    extension = os.path.splitext(os.fspath(path))[1].lower()
    if extension not in EXTENSIONS:
        raise ValueError(f"{path}: cannot tell the format from the extension "
                         f"{extension or '(none)'!r} (known: {', '.join(EXTENSIONS)}); give "
                         f"the input format: {', '.join(FORMATS)}.")
    return EXTENSIONS[extension]


def _open(path):
    return open(path, "rb")


def _lines(path, opener):
    """(number, line, None) per line of the file, decoded as UTF-8 (a BOM dropped); a bad
    byte gives (number, None, InputFileError naming the line)."""
    with opener(path) as f:
        for number, raw in enumerate(f, 1):
            try:
                yield number, raw.decode("utf-8-sig" if number == 1 else "utf-8"), None
            except UnicodeDecodeError as e:
                yield number, None, InputFileError(
                    f"{path}: line {number} is not UTF-8 ({e.reason} at byte {e.start} of "
                    "the line).")


def _json_record(path, number, line):
    try:
        record = json.loads(line)
    except json.JSONDecodeError as e:
        return InputFileError(f"{path}: line {number} is not JSON ({e.msg} at column "
                              f"{e.colno}).")
    if not isinstance(record, dict):
        return InputFileError(f"{path}: line {number} is a JSON {type(record).__name__}, "
                              "not an object ({\"column\": value, ...}).")
    return record


def _table_records(path, file_format, opener):
    """(line, {column: value} or InputFileError) per CSV / TSV record: a record that is not
    the format's, or spans a line that is not UTF-8, is an error, and reading goes on."""
    tsv, bad = file_format == "tsv", {}

    def texts():
        for number, line, error in _lines(path, opener):
            if error is not None:
                bad[number] = error
            yield "" if error is not None else line

    reader = csv.reader(texts(), delimiter="\t" if tsv else ",",
                        quoting=csv.QUOTE_NONE if tsv else csv.QUOTE_MINIMAL, strict=True)
    header, start = None, 1
    while True:
        try:
            fields = next(reader)
            error = None
        except StopIteration:
            break
        except csv.Error as e:
            fields, error = None, InputFileError(
                f"{path}: line {start} is not {file_format.upper()}: {e}.")
        number, start = start, reader.line_num + 1
        spanned = [(n, bad.pop(n)) for n in sorted(n for n in bad if n < start)]
        if spanned and not fields and error is None:  # bad lines read as blank ones
            yield from spanned
            continue
        if spanned and error is None:  # a record over a bad line: that line's error
            error = spanned[0][1]
        if error is not None:
            yield number, error
            continue
        if not fields:
            continue
        if header is None:
            header = [name.strip() for name in fields]
            continue
        if len(fields) != len(header):
            yield number, InputFileError(
                f"{path}: line {number} has {len(fields)} field"
                f"{'s' * (len(fields) != 1)}; the header (line 1) has {len(header)}: "
                f"{', '.join(header)}.")
            continue
        yield number, dict(zip(header, fields))


def _feature_value(feature):
    kind = feature.WhichOneof("kind")
    values = list(getattr(feature, kind).value) if kind else []
    if kind == "bytes_list":
        values = [v.decode("utf-8") for v in values]
    return values[0] if len(values) == 1 else values


def _example_records(path):
    """(record number, {feature: value} or InputFileError) per tf.train.Example of a
    TFRecord file (1-based numbers; a text feature is a bytes feature of one UTF-8 value).
    A corrupt record ends the file: nothing after it can be framed."""
    import tensorflow as tf

    records = iter(tf.data.TFRecordDataset(path))
    number = 0
    while True:
        number += 1
        try:
            raw = next(records)
        except StopIteration:
            return
        except tf.errors.OpError as e:
            yield number, InputFileError(f"{path}: record {number} cannot be read (the file "
                                         f"is corrupt or truncated from there): {e.message}")
            return
        try:
            example = tf.train.Example.FromString(raw.numpy())
            yield number, {name: _feature_value(feature)
                           for name, feature in example.features.feature.items()}
        except Exception as e:  # a record that is not an Example, or not UTF-8
            yield number, InputFileError(f"{path}: record {number} is not a tf.train.Example "
                                         f"of UTF-8 texts ({type(e).__name__}: {e}).")


def _records(path, file_format, opener=_open):
    """(line, {column: value}, a text, or an InputFileError for a bad record) per record;
    a bad record does not stop the reading (`read` decides)."""
    if file_format == "tfrecord":
        yield from _example_records(path)
    elif file_format in ("text", "jsonl"):
        for number, line, error in _lines(path, opener):
            if error is not None:
                yield number, error
            elif line.strip():
                yield number, (line.rstrip("\r\n") if file_format == "text"
                               else _json_record(path, number, line))
    else:
        yield from _table_records(path, file_format, opener)


def read(path, file_format, columns, errors="raise", opener=_open):
    """(row, line, pipeline input) per record of `path`, in file order; rows from 1 (a
    TFRecord file's "line" is its record number).

    Args:
        errors: "raise": the first bad record raises its InputFileError; "yield": a bad
            record comes as (row, line, InputFileError) and reading goes on.
        opener: path -> a binary file object (Beam's `FileSystems.open` for gs:// paths).
    """
    path = os.fspath(path)
    row = 0
    for number, record in _records(path, file_format, opener):
        row += 1
        where = f"{path}: line {number} (row {row})"
        try:
            if isinstance(record, InputFileError):
                raise record
            value = (record if file_format == "text" else columns.input(record, where))
        except InputFileError as e:
            if errors == "raise":
                raise
            value = e
        yield row, number, value


def scan(path, file_format, columns, task):
    """Checks every record of `path` for `task` before a model is loaded; returns how many
    there are."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise InputFileError(f"--input {path!r}: no such file.")
    if file_format == "text" and not columns.single:
        what = "question and context" if task == "question-answering" else "text pairs"
        raise InputFileError(f"{path}: a text file holds one text per line; {task} with "
                             f"{what} needs columns: give a CSV, TSV or JSONL file.")
    count = sum(1 for _ in read(path, file_format, columns))
    if not count:
        raise InputFileError(f"{path}: no records.")
    return count
