"""Pretrains a kbert preset and exports it: the main job of the package.

    python tools/pretrain.py --flagfile=tools/flags/quickstart.flags
    python tools/pretrain.py --preset=bert_base --input='corpus/*.txt' --vocab_file=vocab.txt \\
        --model_dir=runs/base --train_steps=100000 --global_batch_size=256

Every flag is a field of `kbert.training.PretrainingConfig` (same name, same help), so Python
code can do what this program does. Running the same command again resumes from the newest
checkpoint in --model_dir.
"""

import dataclasses
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags, logging  # noqa: E402

from kbert.training import run_config  # noqa: E402
from kbert.training.pretraining_config import PretrainingConfig  # noqa: E402

FLAGS = flags.FLAGS
run_config.define_flags(PretrainingConfig)
flags.DEFINE_bool("dry_run", False, "Check the flags, print the resolved config, and stop: "
                  "true or false.", module_name="Output")
__doc__ += "\n" + run_config.flags_help()


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    from kbert.training import run_pretraining

    # TensorFlow's INFO lines (one per checkpoint) would break the progress bar.
    logging.set_verbosity(logging.WARNING)
    try:
        config = run_config.config_from_flags(PretrainingConfig)
        if FLAGS.dry_run:
            config.validate()
            print(json.dumps(dataclasses.asdict(config), indent=2))
            return
        run_pretraining(config)  # validates the config first
    except run_config.ConfigError as e:  # a bad flag; any other error keeps its traceback
        raise app.UsageError(str(e))
    except FloatingPointError as e:
        raise SystemExit(f"Error: {e}")


if __name__ == "__main__":
    app.run(main)
