"""Static masking: writes masked pretraining examples as TFRecords in the original format.

    kbert-create-pretraining-data --input=stdlib --vocab=vocab.txt \\
        --output=data/train.tfrecord --sequence_length=128 --max_predictions=20 --dupe_factor=5

The files use google-research/bert's feature names (input_ids, input_mask, segment_ids,
masked_lm_positions, masked_lm_ids, masked_lm_weights, next_sentence_labels), so either
project can train on them; `kbert.data.tfrecords.read` maps them to kbert's names. Each of the
`--dupe_factor` passes over the corpus draws new masks (dynamic masking does this every epoch
without files: see `kbert.data.pretraining_examples`).

With `--runner` (DirectRunner, DataflowRunner, FlinkRunner, SparkRunner) the same examples
are made by an Apache Beam pipeline (`kbert.batch.pretraining_beam`; `pip install
"kbert-keras[beam]"`); flags this program does not define go to Beam as its pipeline options:

    kbert-create-pretraining-data --input='corpus/*.txt' --vocab_file=vocab.txt \\
        --output=data/train.tfrecord --num_shards=4 --runner=DirectRunner \\
        --direct_num_workers=2 --direct_running_mode=multi_processing

From a clone, `python tools/create_pretraining_data.py` runs the same program with the same flags.
"""

import sys
import time

from kbert import programs
from kbert.programs.quiet import import_tensorflow_quietly

import_tensorflow_quietly()  # first: keeps TensorFlow's C++ start-up log quiet

from absl import app, flags  # noqa: E402

from kbert import _extras  # noqa: E402
from kbert.data import inputs  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("input", None, f"Corpus: {inputs.INPUT_HELP}.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt, SentencePiece .model or "
                    "byte-level BPE vocab.json with merges.txt beside it (see "
                    "kbert-build-vocab); a .model file is SentencePiece, a .json one BPE.")
flags.DEFINE_alias("vocab", "vocab_file")  # deprecated name
flags.DEFINE_bool("lowercase", None, "Lower-case and strip accents (uncased vocab); "
                  "default: true for a WordPiece or SentencePiece vocabulary, false for a "
                  "byte-level BPE (as kbert-build-vocab learns them).")
flags.DEFINE_string("output", None, "Output path; with --num_shards > 1, -NNNNN-of-NNNNN is added.")
flags.DEFINE_integer("num_shards", 1, "Number of output files.")
flags.DEFINE_integer("sequence_length", 128, "Tokens per example, [CLS] and [SEP] included.")
flags.DEFINE_integer("max_predictions", 20, "Masked positions per example.")
flags.DEFINE_enum("sentence_task", "nsp", ["nsp", "sop", "none"],
                  "Sentence task of the pairs: next-sentence (nsp), sentence-order (sop) or "
                  "none (one segment).")
flags.DEFINE_alias("objective", "sentence_task")  # deprecated name
flags.DEFINE_enum("masking", "token", ["token", "word", "ngram"],
                  "What is masked together: tokens, whole words, or n-grams of whole words "
                  "(ALBERT).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Fraction of the tokens to predict, in (0, 1).")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter target length.")
flags.DEFINE_integer("dupe_factor", 1, "Passes over the corpus, each with new masks.")
flags.DEFINE_integer("seed", 12345, "Random seed, >= 0.")
flags.DEFINE_integer("block_size", 1000, "Documents per block, the unit of work: NSP's "
                     "random B segments come from the block's other documents.")
flags.DEFINE_string("runner", None, "Run as an Apache Beam pipeline on this runner "
                    "(DirectRunner, DataflowRunner, FlinkRunner, SparkRunner, ...); flags "
                    "this program does not define go to Beam as pipeline options. Needs "
                    f"{_extras.install_command('beam')}. Default: one process, no Beam.")
flags.mark_flags_as_required(["input", "vocab_file", "output"])


def parse_flags(argv):
    """absl's parsing, except that flags this program does not define are kept for Beam."""
    try:
        rest = FLAGS(argv, known_only=True)
    except flags.Error as e:
        print(f"FATAL Flags parsing error: {e}", file=sys.stderr)
        sys.exit(1)
    return rest


def main(argv):
    from kbert.data import static_masking
    from kbert.tokenizers import tokenizer_types

    pipeline_args = argv[1:]
    if pipeline_args and not FLAGS.runner:
        raise app.UsageError(f"Unknown flags {' '.join(pipeline_args)} (flags go to Beam "
                             "only with --runner).")

    beam_runner = None
    if FLAGS.runner:
        try:
            _extras.require("apache_beam", "beam", f"--runner={FLAGS.runner} (an Apache Beam "
                            "pipeline)")
        except ImportError as e:
            raise app.UsageError(str(e)) from None
        from kbert.batch import pretraining_beam as beam_runner
    try:  # Beam's file systems read gs:// and the like, tf.data's glob local files
        if beam_runner and beam_runner.is_file_spec(FLAGS.input):
            beam_runner.match_files(FLAGS.input)
        else:
            inputs.documents(FLAGS.input)
    except (FileNotFoundError, ValueError) as e:
        raise app.UsageError(f"--input: {e}")
    try:
        kind = tokenizer_types.get(tokenizer_types.type_of_file(FLAGS.vocab_file))
        lowercase = kind.lowercase if FLAGS.lowercase is None else FLAGS.lowercase
        tokenizer = tokenizer_types.load_written(FLAGS.vocab_file, lowercase=lowercase)
    except (FileNotFoundError, ValueError) as e:
        raise app.UsageError(f"--vocab_file: {e}")
    maker_args = dict(
        sequence_length=FLAGS.sequence_length, max_predictions=FLAGS.max_predictions,
        sentence_task=FLAGS.sentence_task, masking=FLAGS.masking,
        masked_lm_prob=FLAGS.masked_lm_prob, short_seq_prob=FLAGS.short_seq_prob,
        seed=FLAGS.seed, block_size=FLAGS.block_size)
    try:
        maker = static_masking.BlockMaker(tokenizer, **maker_args)  # bad values fail here
        if FLAGS.dupe_factor < 1 or FLAGS.num_shards < 1:
            raise ValueError(f"--dupe_factor={FLAGS.dupe_factor} and --num_shards="
                             f"{FLAGS.num_shards} must be >= 1.")
    except ValueError as e:
        raise app.UsageError(str(e))
    start = time.time()
    if beam_runner:
        files, count = beam_runner.run(
            FLAGS.input, FLAGS.vocab_file, lowercase, FLAGS.output, FLAGS.num_shards,
            FLAGS.dupe_factor, maker_args, [f"--runner={FLAGS.runner}"] + pipeline_args)
    else:
        # Each pass over the corpus draws new masks (the same pairs).
        files, count = static_masking.write(FLAGS.input, maker, FLAGS.output,
                                            num_shards=FLAGS.num_shards,
                                            dupe_factor=FLAGS.dupe_factor)
    print(f"Wrote {count} examples to {len(files)} file(s) ({files[0]}...) "
          f"in {time.time() - start:.0f} s.")


def run():
    """The console entry point `kbert-create-pretraining-data`."""
    programs.run(main, __doc__, flags_parser=parse_flags)

