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


def run_file(path):
    """Where the output `path`'s run is recorded: the task, model and options that wrote it."""
    return path + ".run.json"


def check_run(path, run, overwrite):
    """Refuses to resume the output `path` unless the run recorded beside it (`run_file`)
    is `run` (a JSON-able dict: task, model, options): the lines already there must be this
    run's answers, not another model's or another option's."""
    if overwrite or not os.path.exists(path) or os.path.getsize(path) == 0:
        return
    recorded_at, run = run_file(path), json.loads(json.dumps(run))
    try:
        with open(recorded_at, encoding="utf-8") as f:
            recorded = json.load(f)
    except FileNotFoundError:
        raise PredictionStopped(
            f"--output {path} holds rows but {recorded_at}, the record of the run that wrote "
            "them, is missing: they may be another model's or option's. Pass --overwrite to "
            "start again, or another --output.") from None
    except ValueError as e:
        raise PredictionStopped(f"{recorded_at} is not the JSON kbert writes ({e}). Pass "
                                "--overwrite to start again, or another --output.") from None
    differ = [f"{key} was {recorded.get(key)!r}, now {run.get(key)!r}"
              for key in sorted(set(run) | set(recorded)) if run.get(key) != recorded.get(key)]
    if differ:
        raise PredictionStopped(
            f"--output {path} was written by another run ({'; '.join(differ)}, as "
            f"{recorded_at} records): resuming would mix their answers. Pass --overwrite to "
            "start again, or another --output.")


def record_run(path, run):
    """Writes `run` beside the output `path` (see check_run), whole or not at all."""
    temporary = run_file(path) + ".tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(run, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, run_file(path))


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
