"""`pipeline.export_tflite(path, quantize=None, **options)`: a TFLite model whose
`serving_default` takes raw strings and returns the pipeline's answers, on TFLite's built-in
ops and tensorflow-text's TFLite kernels (`kbert.export.tflite`). Text classification of
single texts; zero-shot classification with the candidate labels and hypothesis template
fixed at export (`labels`, `scores` best first and `label_scores` in the labels' order);
feature extraction (`features`, `padding_mask`, `num_tokens`) and sentence embeddings
(`embedding`); fill-mask, WordPiece (the top_k tokens at each of the first `max_masks`
masks: `max_masks`, default 1, is an export option, not the pipeline's; the literal
"[MASK]" is found in the text's bytes and kept as one token); token classification (every
token's tag and UTF-8 byte span: the grouping of `aggregation_strategy` is done on the
host, `kbert.pipelines.tflite_entities.entities`); question answering on one window (the
best span and the logits; the pipeline's full rule on the host, `tflite_entities.answer`).

What differs from `pipeline.export`'s SavedModel: TFLite cannot fail a call, so a text longer
than the model is cut (the export needs `truncation=True`, and says so); a special-token
literal typed in a text ("[SEP]") is text, not its token; and tokenization follows
tensorflow-text's normaliser (see `kbert.export.export_tflite`).

Each pipeline's graph is its task folder's (`kbert/tasks/<task>/tflite.py`, `PIPELINES`),
found through the task's record.
"""

import inspect

import keras

from kbert.export.tflite import convert
from kbert.pipelines.model_source import KerasRunner
from kbert.tasks import registry

TASKS = registry.pipeline_names(export="tflite")
# Pipeline name -> its task folder's `tflite.PIPELINES` entry, (pipe, model, opts, given,
# **the export's own options) -> (the TFLite tokenizer, its endpoints) (a LookupError here: a
# task record says it exports to TFLite and its folder has no function for it).
BUILDERS = {name: registry.get(name).pipeline_export(name, "tflite") for name in TASKS}


def export_options(build):
    """The options of a TFLite export that are not the pipeline's (fill-mask's `max_masks`):
    the keyword-only arguments of its `build`."""
    return tuple(name for name, parameter in inspect.signature(build).parameters.items()
                 if parameter.kind is parameter.KEYWORD_ONLY)


def export_tflite(pipe, path, quantize, options):
    """Writes `pipe`'s TFLite model to `path` (see `Pipeline.export_tflite`); returns `path`."""
    if pipe.task not in BUILDERS:
        raise NotImplementedError(
            f"pipeline.export_tflite covers {', '.join(TASKS)}, not {pipe.task}: its "
            f"post-processing needs ops TFLite has no kernel for. pipeline.export writes a "
            f"SavedModel.")
    if not isinstance(pipe.source.runner, KerasRunner):
        raise ValueError(f"pipeline.export_tflite needs a pipeline on a kbert model or "
                         f"checkpoint; this one runs {pipe.source.name}, a SavedModel.")
    model = pipe.source.runner.model
    build = BUILDERS[pipe.task]
    options = dict(options)
    extra = {name: options.pop(name) for name in export_options(build) if name in options}
    opts, given = pipe.options(options)
    fast, endpoints = build(pipe, model, opts, given, **extra)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(fast)
    for name, (function, specs) in endpoints.items():
        archive.add_endpoint(name, function, specs)
    return convert(archive, path, quantize)
