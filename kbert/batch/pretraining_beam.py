"""`tools/create_pretraining_data.py --runner=...`: static masking as an Apache Beam pipeline.

The unit of work is `kbert.data.static_masking`'s block (`block_size` consecutive documents
by input ordinal): documents are numbered, grouped by block, and each block is made into
masked examples on whichever worker gets it, from seeds of the block only. So the examples
are those of the single-process tool for the same seed and flags, whatever the runner and
the number of workers; only their order and their shard differ.

Text files are read in parallel (a file per task) in two passes: the first counts each
file's documents, so that the second can number them as one process does. `stdlib` and
`tfds:` inputs are read by one worker and spread from there.

Only `kbert.batch`'s Beam modules (beam_*.py and this one) import apache_beam (`pip install
"kbert-keras[beam]"`); nothing imports them but the tools with --runner.
"""

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from kbert.batch.beam_runners import runner_of
from kbert.data import corpora, static_masking, tfrecords

NAMESPACE = "kbert.pretraining_data"


def is_file_spec(spec):
    return spec != "stdlib" and not spec.startswith("tfds:")


def match_files(spec):
    """The files of a comma-separated glob spec, in `corpora.expand_patterns`' order, on any
    file system Beam reads (local, gs://, s3://, hdfs://)."""
    files = []
    for pattern in (p for p in spec.split(",") if p):
        matches = sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
        if not matches:
            raise FileNotFoundError(f"No input file matches {pattern!r}.")
        files.extend(matches)
    return files


def read_documents(path):
    """The documents of one text file, as `corpora.file_documents` reads them."""
    with FileSystems.open(path) as f:  # .gz decompressed by its extension
        yield from corpora.line_documents(raw.decode("utf-8", errors="replace")
                                          for raw in iter(f.readline, b""))


def _count(indexed_path):
    index, path = indexed_path
    return index, sum(1 for _ in read_documents(path))


def _numbered(indexed_path, counts):
    index, path = indexed_path
    first = sum(counts[i] for i in range(index))
    for offset, sentences in enumerate(read_documents(path)):
        yield first + offset, sentences


class MakeBlock(beam.DoFn):
    """(block, [(ordinal, sentences), ...]) -> (shard, ((pass, block, i), serialized
    example)) for every pass; example i of a block's pass goes to shard
    `(block * dupe_factor + pass + i) % num_shards`."""

    def __init__(self, vocab_file, lowercase, maker_args, dupe_factor, num_shards):
        self.vocab_file, self.lowercase = vocab_file, lowercase
        self.maker_args, self.dupe_factor = maker_args, dupe_factor
        self.num_shards = num_shards

    def setup(self):  # once per worker process: the tokenizer and the traced masker
        from kbert.tokenizers import tokenizer_types

        tokenizer = tokenizer_types.load_written(self.vocab_file, lowercase=self.lowercase)
        self.maker = static_masking.BlockMaker(tokenizer, **self.maker_args)

    def process(self, element):
        block, numbered = element
        passes = self.maker.examples(block, list(numbered), range(self.dupe_factor))
        for pass_index, records in passes.items():
            first = block * self.dupe_factor + pass_index
            for i, record in enumerate(records):
                yield (first + i) % self.num_shards, ((pass_index, block, i), record)

    def teardown(self):  # the worker's truncation counts, in its log
        maker = getattr(self, "maker", None)
        if maker is not None:
            maker.builder.log_statistics()


class WriteShard(beam.DoFn):
    """(shard, [((pass, block, i), record), ...]) -> the shard's file, its records in
    (pass, block, i) order, written under a temporary name and renamed: a retried or
    duplicated attempt replaces the file whole, never appends to it."""

    def __init__(self, files):
        self.files = files
        self.examples = beam.metrics.Metrics.counter(NAMESPACE, "examples")

    def process(self, element):
        import uuid

        import tensorflow as tf

        shard, records = element
        path = self.files[shard]
        partial = f"{path}.partial-{uuid.uuid4().hex}"
        records = sorted(r for r in records if r is not None)
        with tf.io.TFRecordWriter(partial) as writer:
            for _, record in records:
                writer.write(record)
        tf.io.gfile.rename(partial, path, overwrite=True)
        self.examples.inc(len(records))
        yield path


def documents(pipeline, spec):
    """A PCollection of (ordinal, sentences) for corpus `spec`."""
    if is_file_spec(spec):
        files = pipeline | "Files" >> beam.Create(list(enumerate(match_files(spec))))
        counts = files | "Count" >> beam.Map(_count)
        return (files | "Reshuffle files" >> beam.Reshuffle()
                | "Read" >> beam.FlatMap(_numbered, counts=beam.pvalue.AsDict(counts)))
    return (pipeline | "Spec" >> beam.Create([spec])
            | "Read" >> beam.FlatMap(static_masking.numbered_documents)
            | "Spread" >> beam.Reshuffle())


class PretrainingExamples(beam.PTransform):
    """Corpus `spec` -> serialized masked examples (original feature names), `dupe_factor`
    passes; `maker_args` are `static_masking.BlockMaker`'s (`block_size` included)."""

    def __init__(self, spec, vocab_file, lowercase, maker_args, dupe_factor=1, num_shards=1):
        super().__init__()
        self.spec, self.vocab_file, self.lowercase = spec, vocab_file, lowercase
        self.maker_args, self.dupe_factor = dict(maker_args), dupe_factor
        self.num_shards = num_shards

    def expand(self, pipeline):
        block_size = self.maker_args.get("block_size", 1000)
        return (documents(pipeline, self.spec)
                | "By block" >> beam.Map(lambda d: (d[0] // block_size, d))
                | "Group blocks" >> beam.GroupByKey()
                | "Make examples" >> beam.ParDo(MakeBlock(
                    self.vocab_file, self.lowercase, self.maker_args, self.dupe_factor,
                    self.num_shards)))


def write_shards(keyed, files):
    """(shard, ((pass, block, i), record)) -> one file per shard (an empty shard too)."""
    every = keyed.pipeline | "Shards" >> beam.Create([(i, None) for i in range(len(files))])
    return ((keyed, every) | "With every shard" >> beam.Flatten()
            | "Group shards" >> beam.GroupByKey()
            | "Write" >> beam.ParDo(WriteShard(files)))


def run(spec, vocab_file, lowercase, output, num_shards, dupe_factor, maker_args,
        pipeline_args):
    """Runs the pipeline to its end; returns the files (`tfrecords.shard_files`) and the
    number of examples written.

    `pipeline_args`: Beam's own options (`--runner=DataflowRunner`, `--project=...`).
    """
    if not isinstance(num_shards, int) or num_shards < 1:
        raise ValueError(f"num_shards must be an integer >= 1, got {num_shards!r}.")
    if not isinstance(dupe_factor, int) or dupe_factor < 1:
        raise ValueError(f"dupe_factor must be an integer >= 1, got {dupe_factor!r}.")
    import tensorflow as tf

    files = tfrecords.shard_files(output, num_shards)
    if "/" in output:
        tf.io.gfile.makedirs(output.rsplit("/", 1)[0])
    pipeline = beam.Pipeline(runner=runner_of(pipeline_args),
                             options=PipelineOptions(pipeline_args))
    examples = pipeline | PretrainingExamples(spec, vocab_file, lowercase, maker_args,
                                              dupe_factor, num_shards)
    write_shards(examples, files)
    result = pipeline.run()
    result.wait_until_finish()
    counters = result.metrics().query(beam.metrics.MetricsFilter().with_namespace(NAMESPACE)
                                      .with_name("examples"))["counters"]
    count = sum(c.committed if c.committed is not None else c.attempted for c in counters)
    return files, count
