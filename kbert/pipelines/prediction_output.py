"""The output file of batch prediction: one JSON line per input row, in input order, and
how a run resumes it.

A record is {"row": n, "line": l, "input": ..., "output": ...}: `row` the input record's
1-based place, `line` the input file line it starts on, `input` what the pipeline was
given, `output` what it gave for that input (numpy values as JSON numbers and lists). A row
given up on (a call over its time limit, a worker that died, with on_timeout="skip") has
"error" (why) in place of "output".
"""

import json
import logging
import os

logger = logging.getLogger(__name__)


class PredictionStopped(RuntimeError):
    """The run stopped before the end (a call timed out, its worker died, or the pipeline
    refused a row); the output holds every row before, so the same command resumes."""


def record(row, line, value, output=None, error=None):
    """An output line: {"row", "line", "input", "output"}, or "error" in place of "output"
    for a row given up on."""
    out = {"row": row, "line": line, "input": value}
    if error is None:
        out["output"] = output
    else:
        out["error"] = error
    return out


def resume_point(path, rows, overwrite):
    """How many rows `path` already holds: its complete lines (a torn last line is cut off),
    each the record of the input row of its place (`rows`: `input_files.read`'s iterator,
    of which exactly that many rows are taken: the caller goes on with the rest)."""
    if overwrite or not os.path.exists(path):
        with open(path, "wb"):
            return 0
    expected, done, end = iter(rows), 0, 0
    with open(path, "rb") as f:
        for text in f:
            if not text.endswith(b"\n"):
                break
            want = next(expected, None)
            try:
                got = json.loads(text)
                got = (got["row"], got["line"], got["input"])
            except (ValueError, TypeError, KeyError):
                got = None
            if got is None or got != want:
                problem = (f"is not the record of this input's row {want[0]} (input line "
                           f"{want[1]})" if want else
                           f"is past the end of this input ({done} rows)")
                raise PredictionStopped(
                    f"--output {path}: line {done + 1} {problem}. Is it another run's? Pass "
                    "--overwrite to start again, or another --output.")
            done, end = done + 1, end + len(text)
    torn = os.path.getsize(path) - end
    if torn:
        logger.warning("%s: cutting off a torn last line (%d bytes) to resume.", path, torn)
        with open(path, "r+b") as f:
            f.truncate(end)
    return done


class Writer:
    """Appends records to the output, each call's lines flushed and fsynced: a kill loses
    at most the call in flight."""

    def __init__(self, path):
        self.file = open(path, "a", encoding="utf-8")

    def write(self, records):
        self.file.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        self.file.flush()
        os.fsync(self.file.fileno())

    def close(self):
        self.file.close()
