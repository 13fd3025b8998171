"""Batch prediction: a pipeline over a CSV / TSV / JSONL / text file, written as JSON Lines.

    config = PredictionConfig(task="text-classification", model="runs/sst2/export",
                              input="reviews.csv", output="predictions.jsonl")
    run_prediction(config)

`tools/predict.py` is this with flags (every flag is a field of `PredictionConfig`).
With `runner` set, the same inputs run as an Apache Beam pipeline instead
(`kbert.batch.beam_pipeline`: sharded output, dead letters; docs/beam.md).

- The input is read twice: once to check every record and count them, before any model is
  loaded (a bad record names its file and line), then in calls of `rows_per_call` rows,
  which the pipeline runs in length-grouped batches of `batch_size`.
- The output has one line per input row, in input order (`kbert.batch.output`): each
  call's lines are written, flushed and fsynced as it ends, so a kill loses at most the
  call in flight.
- Resume: the same command again keeps the output's complete lines (a torn last one is cut
  off), checks that they are the input's first rows and that the run recorded beside them
  (task, model, pipeline options) is this one, and goes on after them.
- Time limit: the pipeline runs in a worker process (`kbert.batch.worker`); a call over
  `batch_timeout` seconds, or a worker that dies, stops the run naming the rows it gave up on
  (`on_timeout="stop"`), or writes an error record for each of them and goes on with a new
  worker (`"skip"`).
"""

import dataclasses
import logging
import os
import time
from typing import Optional

from kbert import _extras
from kbert.batch import input_files
from kbert.batch.output import (PredictionStopped, Writer, check_run, record,
                                record_run, resume_point)
from kbert.batch.worker import (
    CallFailed, LocalRunner, PipelineError, WorkerRunner,
)
from kbert.pipelines import ALIASES, TASKS, batching
from kbert.pipelines.base import RUN_OPTIONS
from kbert.training import config_fields
from kbert.training.config_fields import ConfigError, setting

logger = logging.getLogger(__name__)
# Options that have their own field, so not in `pipeline_options`.
# The Beam runners `runner` takes (each with its own pipeline options: docs/beam.md).
RUNNERS = ("DirectRunner", "DataflowRunner", "FlinkRunner", "SparkRunner")
_OWN_FIELDS = {"batch_size": "--batch_size", "progress": "(the tool's own progress lines)",
               "candidate_labels": "--candidate_labels"}


@dataclasses.dataclass
class PredictionConfig:
    """A batch prediction run: the pipeline, the input file and its columns, the output."""

    task: str = setting(help="Pipeline task.", group="Model", choices=(*TASKS, *ALIASES))
    model: str = setting(help="What kbert.pipeline takes as model=: a checkpoint directory, "
                         "a preset name, an exported SavedModel directory or an ONNX "
                         "export's directory.", group="Model")
    trusted: bool = setting(False, "Load a SavedModel without kbert's safety check (logged "
                            "as a warning): only one you would run as code.", group="Model")
    runtime: str = setting("auto", "auto (the model's own: ONNX Runtime for an ONNX export, "
                                   "else TensorFlow), tensorflow, or onnxruntime (a kbert "
                                   "model converted to ONNX as it loads; the extra onnx).",
                           group="Model", choices=("auto", "tensorflow", "onnxruntime"))
    quantize: str = setting("none", "With ONNX Runtime: none (float32) or int8 (ONNX "
                                    "Runtime's dynamic quantization; a kbert model needs "
                                    "--runtime=onnxruntime).", group="Model",
                            choices=("none", "int8"))
    pipeline_options: dict = setting(
        help="A pipeline option KEY=VALUE (JSON value), repeatable, passed to every call: "
             "top_k=2, aggregation_strategy=simple, truncation=true, ...", group="Model",
        flag="pipeline_option", from_flag=config_fields.key_values, default_factory=dict)
    candidate_labels: Optional[list] = setting(
        None, "zero-shot-classification's labels, comma-separated.", group="Model")
    input: str = setting(help="The input file (required; with --runner a glob of files, "
                         "local or gs://...).", group="Data")
    input_format: str = setting("auto", "auto (from the extension: .csv, .tsv, .jsonl, "
                                ".txt), csv, tsv, jsonl or text (one text per line).",
                                group="Data", choices=("auto", *input_files.FORMATS))
    text_column: str = setting("text", "Column (JSON key) of the text.", group="Data")
    text_pair_column: Optional[str] = setting(
        None, "Column of the second text of a pair (text-classification; unset: none).",
        group="Data")
    question_column: str = setting("question", "question-answering: the question's column.",
                                   group="Data")
    context_column: str = setting("context", "question-answering: the context's column.",
                                  group="Data")
    rows_per_call: int = setting(256, "Rows handed to one pipeline call (an integer >= 1); "
                                 "the unit of writing, resuming and the time limit.",
                                 group="Schedule", minimum=1)
    batch_size: int = setting(batching.DEFAULT_BATCH_SIZE, "Sequences per model batch "
                              "within a call (an integer >= 1), grouped by length.",
                              group="Schedule", minimum=1)
    batch_timeout: float = setting(300.0, "Seconds one call may take (>= 0; 0: no limit, and "
                                   "the pipeline runs in this process).", group="Schedule",
                                   minimum=0)
    load_timeout: float = setting(600.0, "Seconds loading the model may take (>= 0; 0: no "
                                  "limit).", group="Schedule", minimum=0)
    on_timeout: str = setting("stop", "A call that times out or whose worker dies: stop "
                              "(exit non-zero; a rerun resumes there) or skip (an error "
                              "record per row, then on).", group="Schedule",
                              choices=("stop", "skip"))
    runner: Optional[str] = setting(
        None, f"Run as an Apache Beam pipeline ({_extras.install_command('beam')}): "
        f"{', '.join(RUNNERS)}; unset: on this machine. --input may then be a glob of "
        "files, --output is the prefix of sharded outputs, and flags this program does not "
        "know are Beam pipeline options (docs/beam.md).", group="Schedule")
    output: str = setting(help="The output JSON Lines file (required): one record per row.",
                          group="Output")
    num_shards: int = setting(0, "With --runner: output shards (an integer >= 0; 0: as many "
                              "as input files).", group="Output", minimum=0)
    overwrite: bool = setting(False, "Start the output again instead of resuming it (with "
                              "--runner: replace an earlier run's files).", group="Output")
    # Beam pipeline options ("--project=...", ...), with `runner` only: tools/predict.py
    # passes the flags it does not know.
    beam_args: list = dataclasses.field(default_factory=list, kw_only=True)

    def validate(self):
        """Everything that can be checked without reading the input or loading a model."""
        config_fields.check(self)
        name = ALIASES.get(self.task, self.task)
        if self.candidate_labels is not None and name != "zero-shot-classification":
            raise ConfigError(f"--candidate_labels is for zero-shot-classification, not "
                              f"{self.task}.")
        if name == "zero-shot-classification" and not self.candidate_labels:
            raise ConfigError("zero-shot-classification needs --candidate_labels (e.g. "
                              "--candidate_labels=sports,politics).")
        if self.quantize != "none" and self.runtime == "tensorflow":
            raise ConfigError(f"--quantize={self.quantize} quantizes an ONNX model: it needs "
                              f"--runtime=onnxruntime (or auto, on an ONNX export).")
        if self.text_pair_column and name != "text-classification":
            raise ConfigError(f"--text_pair_column is for text-classification, not "
                              f"{self.task}.")
        allowed = set(RUN_OPTIONS) | set(TASKS[name].OPTIONS)
        for option in self.pipeline_options:
            if option in _OWN_FIELDS:
                raise ConfigError(f"--pipeline_option={option}: use {_OWN_FIELDS[option]}.")
            if option not in allowed:
                raise ConfigError(f"--pipeline_option={option}: {self.task} takes "
                                  f"{', '.join(sorted(allowed - set(_OWN_FIELDS)))}.")
        try:  # a glob's files are told apart one by one (kbert.batch.beam_pipeline)
            if self.runner is None or not set("*?[") & set(self.input):
                self.file_format()
        except ValueError as e:
            raise ConfigError(f"--input_format: {e}") from None
        if os.path.abspath(self.output) == os.path.abspath(self.input):
            raise ConfigError(f"--output {self.output!r} is the input file.")
        if self.runner is not None and self.runner not in RUNNERS:
            raise ConfigError(f"--runner={self.runner!r} is not one of: "
                              f"{', '.join(RUNNERS)}.")
        if self.beam_args and self.runner is None:
            raise ConfigError(f"Unknown flags {' '.join(self.beam_args)}: Beam pipeline "
                              "options are taken with --runner only.")
        if self.num_shards and self.runner is None:
            raise ConfigError("--num_shards is for --runner (this machine writes one file).")

    def file_format(self):
        return input_files.resolve_format(self.input, self.input_format)

    def columns(self):
        return input_files.Columns(ALIASES.get(self.task, self.task), self.text_column,
                                   self.text_pair_column, self.question_column,
                                   self.context_column)

    def run_record(self):
        """What decides the answers, recorded beside the output: a rerun resumes only the
        same (batching, time limits and the input's own check aside)."""
        model = os.path.abspath(self.model) if os.path.exists(self.model) else self.model
        return {"task": ALIASES.get(self.task, self.task), "model": model,
                "pipeline_options": self.pipeline_options,
                "candidate_labels": self.candidate_labels}

    def construction(self):
        """`kbert.pipeline`'s arguments of how the model runs (`runtime`, `quantize`)."""
        return {"runtime": None if self.runtime == "auto" else self.runtime,
                "quantize": None if self.quantize == "none" else self.quantize}

    def call_options(self):
        options = dict(self.pipeline_options, batch_size=self.batch_size, progress=False)
        if self.candidate_labels:
            options["candidate_labels"] = list(self.candidate_labels)
        return options


def _progress(done, total, started, start_rows):
    rate = (done - start_rows) / max(time.time() - started, 1e-9)
    left = (total - done) / rate if rate > 0 else float("inf")
    print(f"Predicted {done}/{total} rows ({100 * done / total:.1f}%), {rate:.1f} rows/s, "
          f"{left:.0f} s left.", flush=True)


def _chunks(rows, size):
    chunk = []
    for item in rows:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _runner(config, task):
    """The pipeline, loaded in a worker process (or here without a time limit)."""
    if config.trusted:
        logger.warning("--trusted: %s is loaded WITHOUT kbert's SavedModel check; whatever "
                       "its graph holds runs, file and Python ops included.", config.model)
    args = (task, config.model, config.trusted, config.construction(), config.call_options())
    try:
        if config.batch_timeout == 0:
            return LocalRunner(*args)
        return WorkerRunner(*args, load_timeout=config.load_timeout or None)
    except (CallFailed, PipelineError) as e:
        raise PredictionStopped(f"--model {config.model}: {e}") from None
    except Exception as e:  # LocalRunner: kbert.pipeline's own error
        raise PredictionStopped(f"--model {config.model}: {type(e).__name__}: {e}") from e


def _rows_of(chunk):
    return f"rows {chunk[0][0]}-{chunk[-1][0]} (input lines {chunk[0][1]}-{chunk[-1][1]})"


def _one_by_one(runner, chunk, config, error):
    """Finds the row a failed call choked on: runs the chunk's rows alone. Returns the
    records of the rows before it and the message naming it."""
    records = []
    for row, line, value in chunk:
        try:
            output = runner([value], config.batch_timeout or None)[0]
        except (PipelineError, CallFailed) as e:
            return records, f"{config.input}: line {line} (row {row}): {e}"
        records.append(record(row, line, value, output))
    return records, (f"{config.input}: {_rows_of(chunk)}: the call failed, but no row "
                     f"fails alone: {error}")


def _on_beam(config):
    """`config` as a Beam pipeline (`kbert.batch.beam_pipeline`, imported only here)."""
    try:
        _extras.require("apache_beam", "beam", f"--runner={config.runner}")
    except ImportError as e:
        raise PredictionStopped(str(e)) from None
    from kbert.batch import beam_pipeline

    return beam_pipeline.run(config)


def run_prediction(config):
    """Runs `config` (see the module docstring); returns {"rows", "written", "skipped"}
    (with `config.runner`: `kbert.batch.beam_pipeline.run`'s).

    Raises:
        input_files.InputFileError: a bad record (before any model is loaded).
        PredictionStopped: a call given up on with on_timeout="stop", a dead worker, or a
            row the pipeline refuses; everything before is in the output.
    """
    config.validate()
    if config.runner is not None:
        return _on_beam(config)
    task = ALIASES.get(config.task, config.task)
    file_format, columns = config.file_format(), config.columns()
    total = input_files.scan(config.input, file_format, columns, task)
    os.makedirs(os.path.dirname(os.path.abspath(config.output)), exist_ok=True)
    # One pass: resume_point takes the rows the output already holds, the calls the rest.
    rows = input_files.read(config.input, file_format, columns)
    check_run(config.output, config.run_record(), config.overwrite)
    done = resume_point(config.output, rows, config.overwrite)
    if not done:
        record_run(config.output, config.run_record())
    if done == total:
        print(f"{config.output} already holds all {total} rows: nothing to do.", flush=True)
        return {"rows": total, "written": 0, "skipped": 0}
    if done:
        print(f"Resuming {config.output} after row {done} of {total}.", flush=True)
    timeout = config.batch_timeout or None
    written = skipped = 0
    started = None
    writer = Writer(config.output)
    runner = None
    try:
        for chunk in _chunks(rows, config.rows_per_call):
            if runner is None:
                runner = _runner(config, task)
                started = started or time.time()  # rows/s of the calls, not the load
            try:
                results = runner([value for _, _, value in chunk], timeout)
                records = [record(r, n, v, out) for (r, n, v), out in zip(chunk, results)]
            except PipelineError as e:
                records, failure = _one_by_one(runner, chunk, config, e)
                writer.write(records)
                raise PredictionStopped(f"{failure} The output holds the rows before it; "
                                        "the same command resumes there.") from None
            except CallFailed as e:
                runner = None  # the worker was stopped; a new one serves the next call
                message = f"{config.input}: gave up on {_rows_of(chunk)}: {e}"
                if config.on_timeout == "stop":
                    raise PredictionStopped(f"{message} The output holds the rows before "
                                            "them; the same command resumes there.") from None
                logger.warning("%s Writing an error record for each.", message)
                records = [record(r, n, v, error=str(e)) for r, n, v in chunk]
                skipped += len(chunk)
            writer.write(records)
            written += len(records)
            _progress(done + written, total, started, done)
    finally:
        writer.close()
        if runner is not None:
            runner.close()
    print(f"Wrote {written} rows to {config.output}"
          f"{f' ({skipped} given up on: error records)' if skipped else ''}.", flush=True)
    return {"rows": total, "written": written, "skipped": skipped}
