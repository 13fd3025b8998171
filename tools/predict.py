"""Batch prediction with any pipeline or exported SavedModel over a CSV / TSV / JSONL / text
file, written as JSON Lines in input order.

    python tools/predict.py --task=text-classification --model=runs/sst2/export \\
        --input=reviews.csv --text_column=review --output=predictions.jsonl
    python tools/predict.py --task=question-answering --model=path/to/squad_checkpoint \\
        --input=questions.jsonl --output=answers.jsonl --pipeline_option=top_k=2

Every flag is a field of `kbert.batch.prediction.PredictionConfig` (same name, same
help), so Python code can do what this program does. Running the same command again resumes
after the rows the output already holds.
"""

import os
import sys

try:  # first: keeps TensorFlow's C++ start-up log quiet
    import quiet_tensorflow  # noqa: F401
except ModuleNotFoundError:  # imported as tools.<name> (the tests)
    from tools import quiet_tensorflow  # noqa: F401
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402

from kbert.batch.prediction import PredictionConfig  # noqa: E402
from kbert.training import config_fields  # noqa: E402

__doc__ += "\n" + config_fields.define_program(PredictionConfig)


def main(argv):
    from kbert.batch.prediction import PredictionStopped, run_prediction
    from kbert.batch.input_files import InputFileError

    config_fields.run_program(PredictionConfig, run_prediction, argv,
                           message_errors=(InputFileError, PredictionStopped))


if __name__ == "__main__":
    app.run(main)
