"""Fine-tunes a pretrained kbert encoder on a task and exports it.

    python tools/finetune.py --flagfile=tools/flags/sst2.flags --preset=bert_base
    python tools/finetune.py --task=token_classifier --checkpoint=path/to/bert \\
        --train_data=train.conll --validation_data=dev.conll --model_dir=runs/ner

Several tasks on one backbone (a head each, one head trained per step, every head scored
after each epoch; see docs/multitask.md):

    python tools/finetune.py --flagfile=tools/flags/glue_multitask.flags
    python tools/finetune.py --checkpoint=path/to/bert --model_dir=runs/mt \
        --multitask=sst2:task=text_classifier,train_data=tfds:glue/sst2 \
        --multitask=ner:task=token_classifier,train_data=train.conll,loss_weight=0.5 \
        --sampling=temperature --sampling_temperature=2 --best_by=mean

Every flag is a field of `kbert.training.FinetuningConfig` (same name, same help), so Python
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
from kbert.training.finetuning_config import FinetuningConfig  # noqa: E402

__doc__ += "\n" + config_fields.define_program(FinetuningConfig)


def main(argv):
    from kbert.training import run_finetuning

    config_fields.run_program(FinetuningConfig, run_finetuning, argv)


if __name__ == "__main__":
    app.run(main)
