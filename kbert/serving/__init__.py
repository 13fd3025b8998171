"""How kbert writes what it serves (imported only by what exports: TensorFlow), under
`kbert.export` (`kbert.pipelines.exporting`): what each runtime allows (`runtimes`), the one
writer (`writer`), what an export says of itself (`metadata`: `export.json`) and TFLite
models of token ids (`tflite`). The endpoints themselves are each task folder's
(`pipeline_serving`, `tflite`).
"""


def __getattr__(name):
    if name == "export_tflite":  # TensorFlow on first use, not on `import kbert.serving.metadata`
        from kbert.serving.tflite import export_tflite

        return export_tflite
    raise AttributeError(f"module 'kbert.serving' has no attribute {name!r}")


__all__ = ["export_tflite"]
