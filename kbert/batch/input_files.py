"""The records of a batch-prediction input file, as the pipeline of a task takes them.

Formats (`FORMATS`; "auto" tells them by the extension, `EXTENSIONS`):
- csv: a header row naming the columns, then one record per row (quoted fields may span
  lines); a row with another number of fields than the header is an error;
- tsv: the same with tabs and no quoting (GLUE's files hold unbalanced quotes);
- jsonl: one JSON object per line, the columns its keys;
- text: one text per line, the whole line (less its line break) the text.
Blank lines hold no record in any format (a CSV row of empty fields is a record).

Each record is numbered twice: `row`, its 1-based place among the records (what the output
file's lines count), and `line`, the file line it starts on (1-based; a CSV/TSV header is
line 1), which every error names. Reading is a generator, so a file of any size streams;
`scan` reads it once to check every record and count them before any model is loaded.
"""

import csv
import json
import os

FORMATS = ("csv", "tsv", "jsonl", "text")
EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".txt": "text",
              ".text": "text"}
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


def _lines(path):
    """The file's lines, decoded as UTF-8 (a BOM dropped); a bad byte names its line."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as e:
                raise InputFileError(f"{path}: line {number} is not UTF-8 ({e.reason} at "
                                     f"byte {e.start} of the line).") from None
            yield line


def _records(path, file_format):
    """(line, {column: value} or a text) per record."""
    if file_format == "text":
        for number, line in enumerate(_lines(path), 1):
            if line.strip():
                yield number, line.rstrip("\r\n")
        return
    if file_format == "jsonl":
        for number, line in enumerate(_lines(path), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputFileError(f"{path}: line {number} is not JSON ({e.msg} at column "
                                     f"{e.colno}).") from None
            if not isinstance(record, dict):
                raise InputFileError(f"{path}: line {number} is a JSON "
                                     f"{type(record).__name__}, not an object "
                                     "({\"column\": value, ...}).")
            yield number, record
        return
    tsv = file_format == "tsv"
    reader = csv.reader(_lines(path), delimiter="\t" if tsv else ",",
                        quoting=csv.QUOTE_NONE if tsv else csv.QUOTE_MINIMAL, strict=True)
    header, start = None, 1
    try:
        for fields in reader:
            number, start = start, reader.line_num + 1
            if not fields:
                continue
            if header is None:
                header = [name.strip() for name in fields]
                continue
            if len(fields) != len(header):
                raise InputFileError(
                    f"{path}: line {number} has {len(fields)} field"
                    f"{'s' * (len(fields) != 1)}; the header (line 1) has {len(header)}: "
                    f"{', '.join(header)}.")
            yield number, dict(zip(header, fields))
    except csv.Error as e:
        raise InputFileError(f"{path}: line {start} is not {file_format.upper()}: {e}.") \
            from None


def read(path, file_format, columns):
    """(row, line, pipeline input) per record of `path`, in file order; rows from 1."""
    path = os.fspath(path)
    row = 0
    for number, record in _records(path, file_format):
        row += 1
        where = f"{path}: line {number} (row {row})"
        if file_format == "text":
            yield row, number, record
        else:
            yield row, number, columns.input(record, where)


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
