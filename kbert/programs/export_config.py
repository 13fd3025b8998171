"""The config of `kbert-export` (kbert/programs/export.py) and what it runs: each field is
a flag of the program. Importing this module defines no flag."""

import dataclasses
import os

from kbert.pipelines import ALIASES, TASKS
from kbert.serving.onnx import QUANTIZE as _ONNX_QUANTIZE
from kbert.serving.runtimes import FORMATS
from kbert.serving.runtimes import QUANTIZE as _TFLITE_QUANTIZE
from kbert.training import config_fields
from kbert.training.config_fields import ConfigError, setting

# "none": kbert.export's quantize=None; then each format's own.
QUANTIZE_OF = {"tflite": tuple(filter(None, _TFLITE_QUANTIZE)),
               "onnx": tuple(filter(None, _ONNX_QUANTIZE))}
QUANTIZE = ("none", *(q for values in QUANTIZE_OF.values() for q in values))


@dataclasses.dataclass
class ExportConfig:
    """An export: the pipeline on a model, and where and how it is written."""

    task: str = setting(help="Pipeline task.", group="Model", choices=(*TASKS, *ALIASES))
    model: str = setting(help="A preset, a run's model_dir or a checkpoint directory "
                              "(required).", group="Model")
    pipeline_options: dict = setting(
        help="A pipeline option KEY=VALUE (JSON value), repeatable, fixed in the export: "
             "top_k=2, aggregation_strategy=simple, truncation=true, ...", group="Model",
        flag="pipeline_option", from_flag=config_fields.key_values, default_factory=dict)
    output: str = setting(help="The SavedModel directory, the .tflite file, or the ONNX "
                               "export's directory (required).", group="Output")
    format: str = setting("saved_model", "saved_model, tflite or onnx (the model of token "
                                         "ids; the pipeline tokenizes on the host).",
                          group="Output", choices=FORMATS)
    quantize: str = setting("none", "none (float32); TFLite: dynamic (int8 weights) or "
                                    "float16; ONNX: int8 (ONNX Runtime's dynamic "
                                    "quantization).", group="Output", choices=QUANTIZE)
    overwrite: bool = setting(False, "Replace what --output already holds.", group="Output")

    def validate(self):
        """Everything that can be checked without loading the model."""
        config_fields.check(self)
        if not self.model:
            raise ConfigError("--model is required: a preset, a run's model_dir or a "
                              "checkpoint directory.")
        if not self.output:
            raise ConfigError("--output is required: the SavedModel directory or .tflite file.")
        if "://" in self.output:
            raise ConfigError(f"--output={self.output}: a local path (the export is written "
                              f"beside it and moved there); copy it to remote storage after.")
        allowed = QUANTIZE_OF.get(self.format, ())
        if self.quantize != "none" and self.quantize not in allowed:
            raise ConfigError(f"--quantize={self.quantize} is not for --format={self.format}"
                              + (f" (it takes none, {', '.join(allowed)})." if allowed
                                 else " (it takes none)."))
        if self.format == "tflite" and not self.output.endswith(".tflite"):
            raise ConfigError(f"--output={self.output}: a TFLite export is one file; name it "
                              f"*.tflite.")
        allowed = set(TASKS[ALIASES.get(self.task, self.task)].OPTIONS)
        for option in self.pipeline_options:
            if option not in allowed:
                raise ConfigError(f"--pipeline_option={option}: {self.task} takes "
                                  f"{', '.join(sorted(allowed))}.")
        if os.path.exists(self.output) and not self.overwrite:
            raise ConfigError(f"--output={self.output} exists: pass --overwrite to replace it, "
                              f"or name another path.")


def export(config):
    """Writes `config`'s export; returns its path. It is written beside --output first and
    moved there when complete, so a failed export leaves what --output held."""
    import shutil
    import tempfile

    import kbert

    config.validate()
    print(f"Loading {config.model} as a {config.task} pipeline ...", flush=True)
    pipe = kbert.pipeline(config.task, model=config.model)
    output = os.path.abspath(config.output)
    os.makedirs(os.path.dirname(output), exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".kbert-export-", dir=os.path.dirname(output))
    try:
        quantize = None if config.quantize == "none" else config.quantize
        written = pipe.export(os.path.join(staging, os.path.basename(output)), config.format,
                              quantize, **config.pipeline_options)
        previous = os.path.join(staging, "previous")
        if os.path.lexists(output):  # --overwrite: kept aside until the new one is in place
            os.replace(output, previous)
        try:
            os.replace(written, output)
        except BaseException:
            if os.path.lexists(previous):
                os.replace(previous, output)
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(f"Exported {pipe.task} on {config.model} to {config.output} ({config.format}"
          f"{', ' + quantize if quantize else ''}).")
    return config.output
