"""kbert: a Keras model zoo for the BERT family.

`import kbert` stays light: `kbert.layers`, `kbert.models`, `kbert.tasks` and `kbert.presets` are
backend-agnostic (keras.ops only) and never import TensorFlow, while `kbert.tokenizers`
(tensorflow-text) is imported only when first used.
"""

import importlib

_SUBMODULES = ("layers", "loading", "models", "presets", "tasks", "tokenizers")


def _version():
    """The installed distribution's version (setup.py's); "0+unknown" where kbert-keras is not
    installed (a checkout on the path)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("kbert-keras")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def __getattr__(name):
    if name == "__version__":  # read on first use: importlib.metadata costs import time
        globals()["__version__"] = version = _version()
        return version
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
    return sorted(set(globals()) | set(_SUBMODULES) | {"__version__", "export", "load",
                                                        "pipeline"})
