"""Pretrains a kbert preset and exports it: the main job of the package.

    python tools/pretrain.py --flagfile=tools/flags/quickstart.flags
    python tools/pretrain.py --preset=bert_base --input='corpus/*.txt' --vocab_file=vocab.txt \\
        --model_dir=runs/base --train_steps=100000 --global_batch_size=256

Every flag is a field of `kbert.training.PretrainingConfig` (same name, same help), so Python
code can do what this program does. Running the same command again resumes from the newest
checkpoint in --model_dir.
"""

import os
import sys

try:  # first: keeps TensorFlow's C++ start-up log quiet
    import quiet_tensorflow  # noqa: F401
except ModuleNotFoundError:  # imported as tools.<name> (the tests)
    from tools import quiet_tensorflow  # noqa: F401
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402

from kbert.training import config_fields  # noqa: E402
from kbert.training.pretraining_config import PretrainingConfig  # noqa: E402

__doc__ += "\n" + config_fields.define_program(PretrainingConfig)


def main(argv):
    from kbert.training import run_pretraining

    config_fields.run_program(PretrainingConfig, run_pretraining, argv)


if __name__ == "__main__":
    app.run(main)
