"""Pretrains a kbert preset and exports it: the main job of the package.

    kbert-pretrain --flagfile=quickstart
    kbert-pretrain --preset=bert_base --input='corpus/*.txt' --vocab_file=vocab.txt \\
        --model_dir=runs/base --train_steps=100000 --global_batch_size=256

Every flag is a field of `kbert.training.PretrainingConfig` (same name, same help), so Python
code can do what this program does. Running the same command again resumes from the newest
checkpoint in --model_dir.

From a clone, `python tools/pretrain.py` runs the same program with the same flags.
"""

from kbert import programs
from kbert.programs.quiet import import_tensorflow_quietly

import_tensorflow_quietly()  # first: keeps TensorFlow's C++ start-up log quiet

from kbert.training import config_fields  # noqa: E402
from kbert.training.pretraining_config import PretrainingConfig  # noqa: E402

__doc__ += "\n" + config_fields.define_program(PretrainingConfig)


def main(argv):
    from kbert.training import run_pretraining

    config_fields.run_program(PretrainingConfig, run_pretraining, argv)


def run():
    """The console entry point `kbert-pretrain`."""
    programs.run(main, __doc__)

