"""Fine-tunes a pretrained kbert encoder on a task and exports it.

    kbert-finetune --flagfile=sst2 --preset=bert_base
    kbert-finetune --task=token_classifier --checkpoint=path/to/bert \\
        --train_data=train.conll --validation_data=dev.conll --model_dir=runs/ner

Several tasks on one backbone (a head each, one head trained per step, every head scored
after each epoch; see docs/multitask.md):

    kbert-finetune --flagfile=glue_multitask
    kbert-finetune --checkpoint=path/to/bert --model_dir=runs/mt \\
        --multitask=sst2:task=text_classifier,train_data=tfds:glue/sst2 \\
        --multitask=ner:task=token_classifier,train_data=train.conll,loss_weight=0.5 \\
        --sampling=temperature --sampling_temperature=2 --best_by=mean

Every flag is a field of `kbert.training.FinetuningConfig` (same name, same help), so Python
code can do what this program does. Running the same command again resumes from the newest
checkpoint in --model_dir.

From a clone, `python tools/finetune.py` runs the same program with the same flags.
"""

from kbert import programs
from kbert.programs.quiet import import_tensorflow_quietly

import_tensorflow_quietly()  # first: keeps TensorFlow's C++ start-up log quiet

from kbert.training import config_fields  # noqa: E402
from kbert.training.finetuning_config import FinetuningConfig  # noqa: E402

__doc__ += "\n" + config_fields.define_program(FinetuningConfig)


def main(argv):
    from kbert.training import run_finetuning

    config_fields.run_program(FinetuningConfig, run_finetuning, argv)


def run():
    """The console entry point `kbert-finetune`."""
    programs.run(main, __doc__)

