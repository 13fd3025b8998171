"""kbert: a Keras model zoo for the BERT family.

`import kbert` stays light: `kbert.layers`, `kbert.models`, `kbert.tasks` and `kbert.presets` are
backend-agnostic (keras.ops only) and never import TensorFlow, while `kbert.tokenizers`
(tensorflow-text) is imported only when first used.
"""

import importlib

__version__ = "0.1.0"

_SUBMODULES = ("layers", "loading", "models", "presets", "tasks", "tokenizers")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"kbert.{name}")
    if name == "pipeline":  # kbert.pipeline(task, model=...): kbert.pipelines, on first use
        return importlib.import_module("kbert.pipelines").pipeline
    if name == "load":  # kbert.load(spec, task=None, head="auto"): kbert.loading, on first use
        return importlib.import_module("kbert.loading").load
    if name == "export":  # kbert.export(model_or_pipeline, path, format=...): on first use
        return importlib.import_module("kbert.pipelines").export
    raise AttributeError(f"module 'kbert' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES) + ["export", "load", "pipeline"])
