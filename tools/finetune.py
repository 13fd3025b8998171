"""Fine-tunes a pretrained kbert encoder on a task and exports it.

    python tools/finetune.py --flagfile=tools/flags/sst2.flags --preset=bert_base
    python tools/finetune.py --task=token_classifier --checkpoint=path/to/bert \\
        --train_data=train.conll --validation_data=dev.conll --model_dir=runs/ner

Every flag is a field of `kbert.training.FinetuningConfig` (same name, same help), so Python
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
from kbert.training.finetuning_config import FinetuningConfig  # noqa: E402

FLAGS = flags.FLAGS
run_config.define_flags(FinetuningConfig)
flags.DEFINE_bool("dry_run", False, "Check the flags, print the resolved config, and stop: "
                  "true or false.", module_name="Output")
__doc__ += "\n" + run_config.flags_help()


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    from kbert.training.finetuning import run_finetuning

    logging.set_verbosity(logging.WARNING)
    try:
        config = run_config.config_from_flags(FinetuningConfig)
        if FLAGS.dry_run:
            config.validate()
            print(json.dumps(dataclasses.asdict(config), indent=2))
            return
        run_finetuning(config)  # validates the config first
    except run_config.ConfigError as e:  # a bad flag; any other error keeps its traceback
        raise app.UsageError(str(e))
    except FloatingPointError as e:
        raise SystemExit(f"Error: {e}")


if __name__ == "__main__":
    app.run(main)
