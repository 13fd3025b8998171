"""How kbert writes what it serves (imported only by what exports: TensorFlow). The entry
point is `kbert.export` (`kbert.pipelines.exporting`); this package is what it stands on.

- `runtimes`: what each runtime allows (TFLite: its built-in ops and tensorflow-text's
  kernels; the quantizations), and the tokenizer's TFLite twin.
- `writer`: the one writer; every export (`kbert.export`, `model.export`, `pipeline.export`,
  `export_tflite`) goes through it.
- `metadata`: `export.json`, what an export says of itself, which the loaders read.
- `tflite`: a model's raw outputs from token ids in a `.tflite` file (`export_tflite`), and
  where TFLite's tokenizer differs from kbert's.

The endpoints themselves are each task folder's (`pipeline_serving`, `tflite`).
"""


def __getattr__(name):
    if name == "export_tflite":  # TensorFlow on first use, not on `import kbert.serving.metadata`
        from kbert.serving.tflite import export_tflite

        return export_tflite
    raise AttributeError(f"module 'kbert.serving' has no attribute {name!r}")


__all__ = ["export_tflite"]
