"""What `kbert.export(model_or_pipeline, path, format="saved_model", **options)` writes (the
one entry point of kbert's exports, `kbert.pipelines.export`, which `model.export` (a task
model), `pipeline.export` and the tools call): a model goes out as
the pipeline of its task, and the pipeline as follows.

- `format="saved_model"` (a directory): `serving_default` takes raw strings and returns the
  pipeline's answers, every step in the graph (tokenization, truncation, the model, and the
  post-processing: softmax / sigmoid and ranking, NLI-to-label scoring, the masked-token
  search and decoding, entities, answer spans over a context's windows: each task folder's
  `pipeline_serving`, found through its record), so that TensorFlow Serving answers what the
  pipeline answers; `serving_ids` beside it takes token ids (`token_ids`, `segment_ids`
  except DistilBERT's, `padding_mask`) and returns the model's raw outputs (`logits`; a
  question answerer's `start_logits` and `end_logits`; an embedder's `embedding`; a
  backbone's, and a masked-LM pretrainer's backbone's, `sequence_output` and
  `pooled_output`), which `kbert.pipeline` runs when it loads the export. It loads with TensorFlow and tensorflow-text alone. A pipeline's answer
  is a list of dicts; the SavedModel returns each key as a tensor with a leading batch
  dimension, padded where rows differ in length (a `num_*` output says how many entries of a
  row are real).
- `format="tflite"` (a `.tflite` file; `quantize`: None, "dynamic" or "float16"): the same
  answers on TFLite's built-in ops and tensorflow-text's TFLite kernels: text
  classification of texts and of pairs (`serving_pairs`: `text`, `text_pair`); zero-shot classification with the candidate labels and
  hypothesis template fixed at export (`labels`, `scores` best first and `label_scores` in
  the labels' order); feature extraction (`features`, `padding_mask`, `num_tokens`) and
  sentence embeddings (`embedding`); fill-mask, WordPiece (the top_k tokens at each of the
  first `max_masks` masks: `max_masks`, default 1, is an export option, not the pipeline's;
  the literal "[MASK]" is found in the text's bytes and kept as one token); token
  classification (every token's tag and UTF-8 byte span: the grouping of
  `aggregation_strategy` is done on the host, `kbert.pipelines.tflite_entities.entities`);
  question answering on one window (the best span and the logits; the pipeline's full rule
  on the host, `tflite_entities.answer`). TFLite cannot fail a call, so a text longer than
  the model is cut (the export needs `truncation=True`, and says so); a special-token literal
  typed in a text ("[SEP]") is text, not its token; and tokenization follows
  tensorflow-text's normaliser (see `kbert.serving.tflite`). `serving_ids` is the
  SavedModel's, on ids as long as the export packs its texts (int32 [B, L]: `max_length`,
  a question answerer's `max_seq_len`; stated in `export.json` as `ids_length`).

Every export goes through the one writer (`kbert.serving.writer`) and states itself in its
metadata (`kbert.serving.metadata`: task, model kind, label names, problem type, longest
input, the options given, signatures).
"""

import inspect

import keras

from kbert.pipelines.model_source import KerasRunner
from kbert.serving import metadata, runtimes, writer
from kbert.tasks import registry
from kbert.tasks.graph.signatures import RAW_OUTPUTS, add_ids_endpoint, raw_outputs

# Pipeline name -> its task folder's endpoints for each runtime: `pipeline_serving.PIPELINES`
# (SavedModel) and `tflite.PIPELINES` (a LookupError here: a task record says it exports and
# its folder has no function for it).
BUILDERS = {runtime: {name: registry.get(name).pipeline_export(name, runtime)
                      for name in registry.pipeline_names(export=runtime)}
            for runtime in runtimes.RUNTIMES}


def export_options(build):
    """The options of an export that are not the pipeline's (TFLite fill-mask's
    `max_masks`): the keyword-only arguments of its `build`."""
    return tuple(name for name, parameter in inspect.signature(build).parameters.items()
                 if parameter.kind is parameter.KEYWORD_ONLY)


def write(pipe, path, format, quantize, options):
    """Writes the export of the pipeline `pipe` to `path` (see `kbert.pipelines.export`):
    `options` are its call options, fixed in the graph (and TFLite fill-mask's
    `max_masks`). Returns `path`."""
    runtimes.check_runtime(format)
    if quantize is not None and format != "tflite":
        raise ValueError(f"quantize={quantize!r} is for format='tflite', not {format!r}.")
    builders = BUILDERS[format]
    if pipe.task not in builders:
        raise NotImplementedError(
            f"A {pipe.task} pipeline does not export to {format}: the exports to {format} are "
            f"{', '.join(builders)}." + (" format='saved_model' writes a SavedModel."
                                         if format == "tflite" else ""))
    if not isinstance(pipe.source.runner, KerasRunner):
        raise ValueError(f"Exporting needs a pipeline on a kbert model or checkpoint; this one "
                         f"runs {pipe.source.name}, which is already an export.")
    model = pipe.source.runner.model
    backbone = getattr(model, "backbone", model)
    size = getattr(getattr(backbone, "config", None), "vocabulary_size", None)
    if size is not None and pipe.tokenizer.vocabulary_size > size:  # ids past the table
        raise ValueError(f"The tokenizer has {pipe.tokenizer.vocabulary_size} tokens but the "
                         f"model's vocabulary_size is {size}: export it with its own "
                         f"tokenizer.")
    build = builders[pipe.task]
    options = dict(options)
    extra = {name: options.pop(name) for name in export_options(build) if name in options}
    opts, given = pipe.options(options)
    pipe.check_export(opts)
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
    # Feature extraction runs the backbone of any model, and a masked-LM pretrainer's ids
    # (no mask positions) go to its backbone: their raw outputs are the backbone's.
    kind, ids_model = source.kind, model
    if registry.get(pipe.task) is registry.BACKBONE or kind == registry.MASKED_LM.name:
        kind, ids_model = "backbone", getattr(model, "backbone", model)
    if kind in RAW_OUTPUTS:
        add_ids_endpoint(archive, ids_model, raw_outputs(ids_model, kind), length)
    meta = metadata.describe(
        runtime=format, task=pipe.task, model=kind,
        label_names=None if kind == "backbone" else source.label_names,
        problem_type=source.problem_type, max_length=pipe.max_length,
        options={**{name: opts[name] for name in sorted(given)}, **extra},
        tokenizer=pipe.tokenizer, windows=source.windows, segments=source.segments,
        **({} if length is None else {"ids_length": length}))
    if format == "tflite":
        return writer.tflite(archive, path, meta, quantize)
    return writer.saved_model(archive, path, meta, pipe.tokenizer)

