"""Batch prediction with any pipeline or exported SavedModel over a CSV / TSV / JSONL / text
file, written as JSON Lines in input order.

    kbert-predict --task=text-classification --model=runs/sst2/export \\
        --input=reviews.csv --text_column=review --output=predictions.jsonl
    kbert-predict --task=question-answering --model=path/to/squad_checkpoint \\
        --input=questions.jsonl --output=answers.jsonl --pipeline_option=top_k=2

    # The same on Apache Beam (pip install "kbert-keras[beam]"): a glob of files in, sharded
    # JSON Lines and dead letters out; unknown flags are Beam pipeline options.
    kbert-predict --task=sentiment-analysis --model=runs/sst2/export \\
        --input='reviews/part-*.jsonl' --output=out/predictions.jsonl \\
        --runner=DirectRunner --direct_num_workers=2 --direct_running_mode=multi_processing

Every flag is a field of `kbert.batch.prediction.PredictionConfig` (same name, same
help), so Python code can do what this program does. Running the same command again resumes
after the rows the output already holds. Without --runner, nothing of Apache Beam is
imported.

From a clone, `python tools/predict.py` runs the same program with the same flags.
"""

import sys

from kbert import programs
from kbert.programs.quiet import import_tensorflow_quietly

import_tensorflow_quietly()  # first: keeps TensorFlow's C++ start-up log quiet

from kbert.batch.prediction import PredictionConfig  # noqa: E402
from kbert.training import config_fields  # noqa: E402

__doc__ += "\n" + config_fields.define_program(PredictionConfig)


def parse_flags(argv):
    """absl's flags of this program; the rest (Beam pipeline options with --runner) stay in
    argv, handed on to `PredictionConfig.beam_args`."""
    from absl import flags

    try:
        return flags.FLAGS(argv, known_only=True)
    except flags.Error as e:  # a bad value of a known flag: absl's message, no traceback
        sys.stderr.write(f"FATAL Flags parsing error: {e}\n")
        sys.stderr.write("Pass --helpshort or --helpfull to see help on flags.\n")
        sys.exit(1)


def main(argv):
    from kbert.batch.prediction import PredictionStopped, run_prediction
    from kbert.batch.input_files import InputFileError

    # What absl did not parse is Beam's (with --runner; an error without it, --dry_run too).
    config_fields.run_program(PredictionConfig, run_prediction, argv[:1],
                              message_errors=(InputFileError, PredictionStopped),
                              fields={"beam_args": list(argv[1:])})


def run():
    """The console entry point `kbert-predict`."""
    programs.run(main, __doc__, flags_parser=parse_flags)

