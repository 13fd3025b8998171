"""What `kbert.export` writes (`kbert.pipelines.export` says what it takes; docs/serving.md
and docs/devices.md what each export answers): the pipeline's endpoints, made by its task
folder (`pipeline_serving` for a SavedModel, `tflite` for TFLite, found through the task's
record); beside them `serving_ids`, token ids in and the model's raw outputs out, which
`kbert.pipeline` runs when it loads the export (TFLite's on ids as long as the export packs
its texts, `ids_length` in `export.json`); all through the one writer
(`kbert.serving.writer`) with the export's metadata (`kbert.serving.metadata`). An ONNX
export is `serving_ids` alone (`kbert.serving.onnx`: the pipeline tokenizes on the host), in
a directory with the tokenizer's files and export.json.
"""

import inspect

import keras

from kbert.pipelines.model_source import KerasRunner
from kbert.serving import metadata, runtimes, writer
from kbert.tasks import registry
from kbert.tasks.graph.signatures import RAW_OUTPUTS, add_ids_endpoint, raw_outputs

# Runtime -> pipeline name -> its task folder's endpoints (`pipeline_serving.PIPELINES`,
# `tflite.PIPELINES`); a LookupError here where a task record says it exports and has none.
BUILDERS = {runtime: {name: registry.get(name).pipeline_export(name, runtime)
                      for name in registry.pipeline_names(export=runtime)}
            for runtime in runtimes.RUNTIMES}


# Call options an export does not keep as its pipeline's defaults: jit_compile is how this
# process runs its model, not an option of the answers; early_exit is in a SavedModel's
# `serving_default`, while `kbert.pipeline` on the export runs `serving_ids`, the full model.
_NOT_KEPT = ("jit_compile", "early_exit")


def _check_early_exit(opts, format):
    if opts.get("early_exit") is not None and format != "saved_model":
        raise ValueError(f"early_exit runs layer by layer in a SavedModel's graph "
                         f"(format='saved_model'); the {format} export holds the full model: "
                         "pass early_exit=None.")


def write(pipe, path, format, quantize, options):
    """Writes the export of the pipeline `pipe` to `path` (see `kbert.pipelines.export`):
    `options` are its call options, fixed in the graph (and TFLite fill-mask's
    `max_masks`). Returns `path`."""
    runtimes.check_runtime(format)
    if format == "onnx":
        return _write_onnx(pipe, path, quantize, options)
    if quantize is not None and format != "tflite":
        raise ValueError(f"quantize={quantize!r} is for format='tflite' or 'onnx', not "
                         f"{format!r}.")
    builders = BUILDERS[format]
    if pipe.task not in builders:
        raise NotImplementedError(
            f"A {pipe.task} pipeline does not export to {format}: the exports to {format} are "
            f"{', '.join(builders)}." + (" format='saved_model' writes a SavedModel."
                                         if format == "tflite" else ""))
    model = _keras_model(pipe)
    build = builders[pipe.task]
    options = dict(options)
    # The options of the export, not the pipeline's (TFLite fill-mask's `max_masks`): the
    # keyword-only arguments of its `build`.
    extra = {name: options.pop(name) for name, p in inspect.signature(build).parameters.items()
             if p.kind is p.KEYWORD_ONLY and name in options}
    opts, given = pipe.options(options)
    pipe.check_export(opts)
    _check_early_exit(opts, format)
    archive = keras.export.ExportArchive()
    archive.track(model)
    if format == "tflite":
        # TFLite slices no tensor of a length unknown at conversion: the ids are as long as
        # the text is packed.
        fast, endpoints, length = build(pipe, model, opts, given, **extra)
        archive.track(fast)
    else:
        endpoints, length = build(pipe, model, opts, given, **extra), None
        archive.track(pipe.tokenizer)
    for name, (function, specs) in endpoints.items():
        archive.add_endpoint(name, function, specs)
    source = pipe.source
    # Feature extraction runs the backbone of any model, and a masked-LM pretrainer's
    # SavedModel takes ids (no mask positions) to its backbone: their raw outputs are the
    # backbone's. (A fill-mask .tflite has no serving_ids: the backbone would be a second
    # graph in the file.)
    kind, ids_model = source.kind, model
    masked_lm = kind == registry.MASKED_LM.name and format == "saved_model"
    if registry.get(pipe.task) is registry.BACKBONE or masked_lm:
        kind, ids_model = "backbone", getattr(model, "backbone", model)
    if kind in RAW_OUTPUTS:
        add_ids_endpoint(archive, ids_model, raw_outputs(ids_model, kind), length)
    meta = metadata.describe(
        runtime=format, task=pipe.task, model=kind,
        label_names=None if kind == "backbone" else source.label_names,
        problem_type=source.problem_type, max_length=pipe.max_length,
        options={**{name: opts[name] for name in sorted(given) if name not in _NOT_KEPT},
                 **extra},
        tokenizer=pipe.tokenizer, windows=source.windows, segments=source.segments,
        **({} if length is None else {"ids_length": length}))
    if format == "tflite":
        return writer.tflite(archive, path, meta, quantize)
    return writer.saved_model(archive, path, meta, pipe.tokenizer)


def _keras_model(pipe):
    """The Keras model that `pipe` runs; a ValueError where it runs an export, or where its
    tokenizer has ids past the model's vocabulary."""
    if not isinstance(pipe.source.runner, KerasRunner):
        raise ValueError(f"Exporting needs a pipeline that runs a kbert model on TensorFlow; "
                         f"this one runs {pipe.source.name}: export the model or checkpoint "
                         f"(kbert.pipeline(task, model=...) without runtime=).")
    model = pipe.source.runner.model
    backbone = getattr(model, "backbone", model)
    size = getattr(getattr(backbone, "config", None), "vocabulary_size", None)
    if size is not None and pipe.tokenizer.vocabulary_size > size:  # ids past the table
        raise ValueError(f"The tokenizer has {pipe.tokenizer.vocabulary_size} tokens but the "
                         f"model's vocabulary_size is {size}: export it with its own "
                         f"tokenizer.")
    return model


def _write_onnx(pipe, path, quantize, options):
    """The ONNX export (`kbert.serving.writer.onnx_directory`) of the model `pipe` runs: its
    raw outputs, the pipeline's call options given kept in export.json as the defaults of
    the same pipeline on it (they run on the host, not in the graph)."""
    model = _keras_model(pipe)
    source = pipe.source
    kind = source.kind
    if registry.get(pipe.task) is registry.BACKBONE:  # feature extraction: the backbone
        kind, model = "backbone", getattr(model, "backbone", model)
    if kind not in RAW_OUTPUTS:
        raise NotImplementedError(
            f"A {pipe.task} pipeline on a {kind.replace('_', ' ')} does not export to ONNX: "
            f"an ONNX export holds a model of token ids and its raw outputs, of a "
            f"{', '.join(sorted(RAW_OUTPUTS))}. format='saved_model' writes a SavedModel.")
    opts, given = pipe.options(options)
    pipe.check_export(opts)  # options no export can answer (a backbone's internals)
    _check_early_exit(opts, "onnx")
    meta = metadata.describe(
        runtime="onnx", task=pipe.task, model=kind,
        label_names=None if kind == "backbone" else source.label_names,
        problem_type=source.problem_type, max_length=pipe.max_length,
        options={name: opts[name] for name in sorted(given) if name not in _NOT_KEPT},
        tokenizer=pipe.tokenizer, windows=source.windows, segments=source.segments)
    return writer.onnx_directory(model, kind, path, meta, pipe.tokenizer, quantize)

