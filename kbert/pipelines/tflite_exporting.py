"""`pipeline.export_tflite(path, quantize=None, **options)`: a TFLite model whose
`serving_default` takes raw strings and returns the pipeline's answers, on TFLite's built-in
ops and tensorflow-text's TFLite kernels (`kbert.export.tflite`). Text classification of
single texts for now; the other tasks are refused by name.

What differs from `pipeline.export`'s SavedModel: TFLite cannot fail a call, so a text longer
than the model is cut (the export needs `truncation=True`, and says so); a special-token
literal typed in a text ("[SEP]") is text, not its token; and tokenization follows
tensorflow-text's normaliser (see `kbert.export.export_tflite`).
"""

import keras
import tensorflow as tf

from kbert.export.signature_helpers import STRINGS, run_model
from kbert.export.tflite import convert, pack_text, text_tokenizer
from kbert.pipelines.exporting import _activation, _scored
from kbert.pipelines.model_source import KerasRunner

TASKS = ("text-classification",)


def _text_classification(pipe, model, opts, given):
    if opts["truncation"] in (False, "do_not_truncate", "only_second"):
        raise ValueError(
            f"truncation={opts['truncation']!r}: a TFLite model cannot refuse a text longer "
            f"than the model (TFLite has no assertion op); export with truncation=True, and "
            f"texts longer than {pipe.max_length} tokens are cut.")
    names = pipe.source.label_names
    top_k, legacy = pipe.ranking(opts, given)
    count = len(names) if top_k is None else min(int(top_k), len(names))
    order = not (legacy and top_k is None)  # return_all_scores: label order
    function = _activation(pipe.function(opts))
    fast = text_tokenizer(pipe.tokenizer, split_literals=True)

    def serve(text):
        features = pack_text(pipe.tokenizer, fast.tokenize(text), pipe.max_length)
        label, score = _scored(function(run_model(model, features)), names, order, count)
        return {"label": label, "score": score}

    return fast, serve


def export_tflite(pipe, path, quantize, options):
    """Writes `pipe`'s TFLite model to `path` (see `Pipeline.export_tflite`); returns `path`."""
    if pipe.task not in TASKS:
        raise NotImplementedError(
            f"pipeline.export_tflite covers {', '.join(TASKS)}, not {pipe.task}: its "
            f"post-processing needs ops TFLite has no kernel for. pipeline.export writes a "
            f"SavedModel.")
    if not isinstance(pipe.source.runner, KerasRunner):
        raise ValueError(f"pipeline.export_tflite needs a pipeline on a kbert model or "
                         f"checkpoint; this one runs {pipe.source.name}, a SavedModel.")
    model = pipe.source.runner.model
    opts, given = pipe.options(options)
    fast, serve = _text_classification(pipe, model, opts, given)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(fast)
    archive.add_endpoint("serving_default", serve, [STRINGS])
    return convert(archive, path, quantize)
