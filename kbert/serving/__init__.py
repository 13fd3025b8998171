"""How kbert writes what it serves (imported only by what exports: TensorFlow). The entry
point is `kbert.export` (`kbert.pipelines.exporting`); this package is what it stands on.

- `runtimes`: what each runtime allows (TFLite: its built-in ops and tensorflow-text's
  kernels; the quantizations), and the tokenizer's TFLite twin.
- `writer`: the one writer; every export (`kbert.export`, `model.export`, `pipeline.export`,
  `export_saved_model`, `export_tflite`) goes through it.
- `metadata`: `export.json`, what an export says of itself, which the loaders read.
- `saved_model`: kbert's own signatures of backbones and pretrainers
  (`export_saved_model`); `tflite`: a model's raw outputs from token ids in a `.tflite`
  file (`export_tflite`), and where TFLite's tokenizer differs from kbert's.

The endpoints themselves are each task folder's (`pipeline_serving`, `tflite`).
"""

import importlib

_LAZY = {"export_saved_model": "saved_model", "export_tflite": "tflite"}

__all__ = list(_LAZY)


def __getattr__(name):
    if name in _LAZY:  # TensorFlow on first use, not on `import kbert.serving.metadata`
        return getattr(importlib.import_module(f"kbert.serving.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'kbert.serving' has no attribute {name!r}")
