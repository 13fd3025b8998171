"""Exports a model as a pipeline's answers: a SavedModel that takes raw strings (or a
`.tflite` file, or an ONNX export's directory: the model of token ids for ONNX Runtime), with
the `export.json` that `kbert.pipeline(task, model=path)` and `kbert-predict` read. What it
writes is `kbert.export`'s (docs/serving.md).

    kbert-export --task=text-classification --model=runs/sst2 --output=exports/sst2
    kbert-export --task=token-classification --model=path/to/hf_ner_checkpoint \\
        --output=exports/ner --pipeline_option=aggregation_strategy=simple
    kbert-export --task=fill-mask --model=runs/quickstart --format=tflite \\
        --quantize=dynamic --pipeline_option=truncation=true --output=exports/quickstart.tflite
    kbert-export --task=text-classification --model=runs/sst2 --format=onnx \
        --quantize=int8 --output=exports/sst2-onnx

--model is anything `kbert.pipeline` loads (a preset, a kbert-pretrain or kbert-finetune
run's model_dir, a Hugging Face, TF1, keras-hub or kbert checkpoint directory). In Python,
`kbert.pipeline(task, model=...).export(output, format, quantize, **options)` does the same.

From a clone, `python tools/export.py` runs the same program with the same flags.
"""

from kbert import programs
from kbert.programs.quiet import import_tensorflow_quietly

import_tensorflow_quietly()  # first: keeps TensorFlow's C++ start-up log quiet

from kbert.programs.export_config import ExportConfig, export  # noqa: E402
from kbert.training import config_fields  # noqa: E402

__doc__ += "\n" + config_fields.define_program(ExportConfig)


def main(argv):
    # What kbert.pipeline and export refuse (a model that is not there, options an export
    # cannot fix): a message, no traceback.
    errors = (FileNotFoundError, ValueError, TypeError, NotImplementedError)
    config_fields.run_program(ExportConfig, export, argv, message_errors=errors)


def run():
    """The console entry point `kbert-export`."""
    programs.run(main, __doc__)

