"""`tools/predict.py --runner=...`: batch prediction as an Apache Beam pipeline.

    files (a glob) -> read each file (its records numbered by row and line; a bad record is a
    dead letter) -> RunInference (`beam_inference.PipelineModelHandler`, keyed by file and
    row) -> shards of JSON Lines, each in input order -> the counts, checked

- Output: `<prefix>-SSSSS-of-NNNNN.jsonl` (`--output=<prefix>.jsonl`), NNNNN `--num_shards`
  (0: as many as input files). Blocks of `rows_per_call` consecutive rows of a file go to a
  shard chosen by a hash of (file, block), so a shard's records, sorted by (file, row), are
  in input order; each record is `output.record`'s plus "file".
- Dead letters: `<prefix>.dead_letters.jsonl`, one record per input record that has no
  prediction: {"file", "row", "line", "input" (when it could be read), "error"}. A record
  the reader cannot take is one; so is a record the pipeline refuses (a failed Beam batch is
  run again one record at a time, which names the record).
- Counts: `<prefix>.counts.json` {"records", "predictions", "dead_letters"}: what was read
  and what was written, counted from the files' records and from the written files; the run
  fails unless records == predictions + dead_letters.
- Retries: every file is written whole under `<prefix>.beam-temp/`, then renamed into place,
  its content fixed by its records; a retried bundle (Dataflow retries a failed one) writes
  the same file again. A failed run leaves what it wrote: run it again with --overwrite.

Files are the unit of reading (a record's line number needs the file read in order): shard
a big input. A shard's records are sorted in one worker's memory: raise --num_shards for
more than a few million records per shard.
"""

import json
import os
import uuid
import zlib

import apache_beam as beam
from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.base import KeyedModelHandler, RunInference
from apache_beam.options.pipeline_options import PipelineOptions

from kbert.batch import input_files
from kbert.batch.beam_inference import PipelineModelHandler
from kbert.batch.beam_runners import local_runner
from kbert.batch.output import PredictionStopped
from kbert.pipelines import ALIASES


class OutputPaths:
    """The files of a run whose --output is `output` (see the module docstring)."""

    def __init__(self, output, num_shards):
        self.prefix = output[:-len(".jsonl")] if output.endswith(".jsonl") else output
        self.shards = [f"{self.prefix}-{i:05d}-of-{num_shards:05d}.jsonl"
                       for i in range(num_shards)]
        self.dead_letters = f"{self.prefix}.dead_letters.jsonl"
        self.counts = f"{self.prefix}.counts.json"
        self.temp = f"{self.prefix}.beam-temp"

    def existing(self):
        """What a run of this prefix left (any shard count)."""
        pattern = f"{self.prefix}-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].jsonl"
        found = [m.path for m in FileSystems.match([pattern])[0].metadata_list]
        return found + [p for p in (self.dead_letters, self.counts) if FileSystems.exists(p)]


def matched_files(pattern):
    """The files `pattern` (a path or a glob, local or gs://...) matches, sorted."""
    try:
        found = FileSystems.match([pattern])[0].metadata_list
    except Exception as e:  # BeamIOError: a bad scheme, an unreadable bucket
        raise input_files.InputFileError(f"--input {pattern!r}: {e}") from None
    files = sorted(m.path for m in found if not m.path.endswith("/"))
    if not files:
        raise input_files.InputFileError(f"--input {pattern!r} matches no file.")
    return files


def write_whole(path, lines, temp):
    """`lines` as the file `path`, written under `temp` and renamed into place."""
    staged = f"{temp}/{os.path.basename(path)}.{uuid.uuid4().hex}"
    with FileSystems.create(staged) as f:
        f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines).encode())
    if FileSystems.exists(path):
        FileSystems.delete([path])
    FileSystems.rename([staged], [path])
    return len(lines)


def dead_letter(path, row, line, value, error):
    out = {"file": path, "row": row, "line": line}
    if value is not None:
        out["input"] = value
    out["error"] = error
    return out


class ReadFile(beam.DoFn):
    """(index, path, format) -> ((index, path, row, line), pipeline input) per record;
    a bad record to "dead" ((index, line), dead letter); the file's record count to
    "count"."""

    def __init__(self, columns):
        self.columns = columns

    def process(self, item):
        index, path, file_format = item
        count = 0
        for row, line, value in input_files.read(path, file_format, self.columns,
                                                 errors="yield", opener=FileSystems.open):
            count += 1
            if isinstance(value, input_files.InputFileError):
                yield beam.pvalue.TaggedOutput(
                    "dead", ((index, line), dead_letter(path, row, line, None, str(value))))
            else:
                yield (index, path, row, line), value
        yield beam.pvalue.TaggedOutput("count", count)


def _failed(item):
    """RunInference's dead letter (batch, (type, repr, traceback)) -> its records."""
    return item[0]


def _refused(item):
    """A record the pipeline refused alone -> ((index, line), dead letter)."""
    ((index, path, row, line), value), = item[0]
    return (index, line), dead_letter(path, row, line, value, item[1][1])


def _shard_of(key, block, num_shards):
    index, _, row, _ = key
    return zlib.crc32(f"{index}:{(row - 1) // block}".encode()) % num_shards


def _prediction(item, block, num_shards):
    key, result = item
    index, path, row, line = key
    record = {"file": path, "row": row, "line": line, "input": result.example,
              "output": result.inference}
    return _shard_of(key, block, num_shards), ((index, row), record)


class WriteSorted(beam.DoFn):
    """(key, [(order, record) or None]) -> the file paths[key] holding the records in
    order; yields how many."""

    def __init__(self, paths, temp):
        self.paths, self.temp = paths, temp

    def process(self, item):
        key, records = item
        records = sorted((r for r in records if r is not None), key=lambda r: r[0])
        yield write_whole(self.paths[key], [r for _, r in records], self.temp)


def _write_counts(_, path, temp, records, predictions, dead):
    counts = {"records": records, "predictions": predictions, "dead_letters": dead}
    write_whole(path, [counts], temp)
    return counts


def _total(pcoll, name):
    return pcoll | name >> beam.CombineGlobally(sum)


def build(pipeline, files, columns, handler, paths, block):
    """The prediction graph on `pipeline`: `files` [(path, format)] in, `paths`
    (`OutputPaths`) out, `block` rows per hashed block."""
    num_shards = len(paths.shards)
    read = (pipeline
            | "Files" >> beam.Create([(i, p, f) for i, (p, f) in enumerate(files)])
            | "SpreadFiles" >> beam.Reshuffle()
            | "Read" >> beam.ParDo(ReadFile(columns)).with_outputs("dead", "count",
                                                                   main="records"))
    tag = uuid.uuid4().hex  # one model per worker process for both RunInference steps
    predicted, failed = (read.records
                         | "SpreadRecords" >> beam.Reshuffle()
                         | "Predict" >> RunInference(KeyedModelHandler(handler),
                                                     model_identifier=tag)
                         .with_exception_handling())
    alone, refused = (failed.failed_inferences
                      | "FailedBatches" >> beam.FlatMap(_failed)
                      | "PredictAlone" >> RunInference(
                          KeyedModelHandler(handler.with_batch_size(1)),
                          model_identifier=tag).with_exception_handling())
    shards = ((predicted, alone) | "Predictions" >> beam.Flatten()
              | "ToShards" >> beam.Map(_prediction, block, num_shards))
    every_shard = pipeline | "EveryShard" >> beam.Create([(i, None) for i in
                                                         range(num_shards)])
    written = ((shards, every_shard) | "AllShards" >> beam.Flatten()
               | "GroupShards" >> beam.GroupByKey()
               | "WriteShards" >> beam.ParDo(WriteSorted(paths.shards, paths.temp)))
    dead = ((read.dead,
             refused.failed_inferences | "Refused" >> beam.Map(_refused),
             pipeline | "EveryDeadLetter" >> beam.Create([None]))
            | "DeadLetters" >> beam.Flatten()
            | "OneFile" >> beam.Map(lambda d: (0, d))
            | "GroupDead" >> beam.GroupByKey()
            | "WriteDead" >> beam.ParDo(WriteSorted([paths.dead_letters], paths.temp)))
    return (pipeline
            | "Once" >> beam.Create([None])
            | "Counts" >> beam.Map(
                _write_counts, paths.counts, paths.temp,
                beam.pvalue.AsSingleton(_total(read.count, "RecordsIn")),
                beam.pvalue.AsSingleton(_total(written, "PredictionsOut")),
                beam.pvalue.AsSingleton(_total(dead, "DeadLettersOut"))))


def run(config, handler=None):
    """`run_prediction(config)` with `config.runner` set: see the module docstring.
    Returns {"rows", "written", "dead_letters", "shards"}; `handler` replaces the
    `PipelineModelHandler` of `config` (tests)."""
    task = ALIASES.get(config.task, config.task)
    columns = config.columns()
    try:
        files = [(path, input_files.resolve_format(path, config.input_format))
                 for path in matched_files(config.input)]
    except ValueError as e:
        if isinstance(e, input_files.InputFileError):
            raise
        raise input_files.InputFileError(f"--input {config.input}: {e}") from None
    for path, file_format in files:
        if file_format == "text" and not columns.single:
            raise input_files.InputFileError(f"{path}: a text file holds one text per line; "
                                             f"{task} needs columns: give CSV, TSV, JSONL "
                                             "or TFRecord files.")
    paths = OutputPaths(config.output, config.num_shards or len(files))
    left = paths.existing()
    if left and not config.overwrite:
        raise PredictionStopped(f"--output {config.output}: {len(left)} file(s) of an earlier "
                                f"run are there ({left[0]}, ...). Pass --overwrite to replace "
                                "them, or another --output.")
    if left:
        FileSystems.delete(left)
    if handler is None:
        options = {k: v for k, v in config.call_options().items() if k != "progress"}
        handler = PipelineModelHandler(task, config.model, trusted=config.trusted,
                                       options=options, max_batch_size=config.rows_per_call,
                                       **config.construction())
    pipeline = beam.Pipeline(runner=local_runner(config.runner), options=PipelineOptions(
        [f"--runner={config.runner}", *config.beam_args]))
    build(pipeline, files, columns, handler, paths, config.rows_per_call)
    print(f"Running on {config.runner}: {len(files)} input file(s) -> {len(paths.shards)} "
          f"shard(s) {paths.prefix}-*.jsonl.", flush=True)
    try:
        pipeline.run().wait_until_finish()
    except Exception as e:  # a worker's error, as the runner reports it
        raise PredictionStopped(f"The Beam pipeline failed: {type(e).__name__}: {e}") from e
    with FileSystems.open(paths.counts) as f:
        counts = json.loads(f.read())
    for folder in (paths.temp, paths.temp + "/"):  # a local folder; an object store's prefix
        try:
            FileSystems.delete([folder])
            break
        except BeamIOError:
            continue
    print(f"Read {counts['records']} records: {counts['predictions']} predictions in "
          f"{len(paths.shards)} shard(s), {counts['dead_letters']} dead letters "
          f"({paths.dead_letters}).", flush=True)
    if counts["records"] != counts["predictions"] + counts["dead_letters"]:
        raise PredictionStopped(f"{paths.counts}: {counts['records']} records in, but "
                                f"{counts['predictions']} predictions + "
                                f"{counts['dead_letters']} dead letters out.")
    return {"rows": counts["records"], "written": counts["predictions"],
            "dead_letters": counts["dead_letters"], "shards": paths.shards}
