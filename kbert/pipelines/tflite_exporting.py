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
"""

import keras
import tensorflow as tf

from kbert.tasks.graph.signatures import STRINGS, run_model
from kbert.export.tflite import convert, pack_text, text_tokenizer
from kbert.pipelines.model_source import KerasRunner
from kbert.tasks import registry
from kbert.tasks.text_classification import tflite as text_classification_tflite

TASKS = registry.pipeline_names(export="tflite")


def _truncating(pipe, truncation):
    if truncation in (False, None, "do_not_truncate", "only_second"):
        raise ValueError(
            f"truncation={truncation!r}: a TFLite model cannot refuse a text longer "
            f"than the model (TFLite has no assertion op); export with truncation=True, and "
            f"texts longer than {pipe.max_length} tokens are cut.")


def _length(pipe, max_length):
    """The tokens a TFLite model cuts texts to: `max_length`, at most the model's."""
    return pipe.max_length if max_length is None else min(max_length, pipe.max_length)


def _text_classification(pipe, model, opts, given):
    truncation, max_length = pipe.tokenization(opts)
    _truncating(pipe, truncation)
    return text_classification_tflite.text_classification(
        pipe, model, opts, given, lambda: text_tokenizer(pipe.tokenizer, split_literals=True),
        _length(pipe, max_length))


def _zero_shot_classification(pipe, model, opts, given):
    return text_classification_tflite.zero_shot_classification(
        pipe, model, opts, given, lambda: text_tokenizer(pipe.tokenizer, split_literals=True))


def _single_texts(pipe, model, truncation, outputs, max_length=None):
    _truncating(pipe, truncation)
    fast = text_tokenizer(pipe.tokenizer, split_literals=True)

    def serve(text):
        features = pack_text(pipe.tokenizer, fast.tokenize(text), _length(pipe, max_length))
        return outputs(run_model(model, features), features)

    return fast, serve


def _feature_extraction(pipe, model, opts, given):
    truncation, max_length = pipe.tokenization(opts, "tokenize_kwargs")

    def outputs(result, features):
        mask = features["padding_mask"]
        return {"features": tf.cast(result["sequence_output"], tf.float32) *
                tf.cast(mask, tf.float32)[:, :, None],
                "padding_mask": mask, "num_tokens": tf.reduce_sum(mask, axis=1)}

    return _single_texts(pipe, model, truncation, outputs, max_length)


def _sentence_embeddings(pipe, model, opts, given):
    return _single_texts(pipe, model, opts["truncation"], lambda result, features: {
        "embedding": tf.cast(result, tf.float32)})


def _word_piece_only(pipe, what, why):
    """The tasks whose TFLite graph reads FastBertTokenizer's offsets take WordPiece alone."""
    if not pipe.tokenizer.tflite_offsets:
        raise ValueError(f"pipeline.export_tflite: only a WordPiece {what} goes into TFLite "
                         f"({why}); pipeline.export writes a SavedModel.")


def _fill_mask(pipe, model, opts, given, max_masks=1):
    from kbert.tasks.fill_mask.decode import candidates
    from kbert.tasks.fill_mask.tflite import fill_mask_serving

    _word_piece_only(pipe, "fill-mask model",
                     "the mask literal is found by FastBertTokenizer's byte offsets")
    if isinstance(max_masks, bool) or not isinstance(max_masks, int) or max_masks < 1:
        raise ValueError(f"max_masks must be a positive integer (the masks per text the "
                         f"TFLite model fills), got {max_masks!r}.")
    truncation, max_length = pipe.tokenization(opts, "tokenizer_kwargs")
    _truncating(pipe, truncation)
    top_k, targets = pipe.top_k_and_targets(opts)
    top_k = candidates(top_k, targets, pipe.tokenizer.vocabulary_size)
    if targets is not None:
        targets = [int(t) for t in targets]
    strings = [pipe.encoder.decode([i]) for i in range(pipe.tokenizer.vocabulary_size)]
    fast = text_tokenizer(pipe.tokenizer, split_literals=True)
    serve = fill_mask_serving(pipe.tokenizer, fast,
                              lambda features: run_model(model, features),
                              _length(pipe, max_length),
                              max_masks, top_k, targets, strings)
    return fast, serve


def _token_classification(pipe, model, opts, given):
    from kbert.tasks.token_classification.tflite import pipeline_serving

    _word_piece_only(pipe, "token classifier",
                     "its character spans come from FastBertTokenizer")
    return pipeline_serving(pipe, model, opts,
                            lambda: text_tokenizer(pipe.tokenizer, split_literals=True))


def _question_answering(pipe, model, opts, given):
    from kbert.tasks.question_answering.tflite import question_answerer_serving

    _word_piece_only(pipe, "question answerer",
                     "its character spans come from FastBertTokenizer")
    top_k, max_seq_len, doc_stride, max_answer_len = pipe.settings(opts)
    for name in ("top_k", "doc_stride", "handle_impossible_answer", "align_to_words"):
        if name in given:
            raise ValueError(
                f"{name}={given[name]!r}: a TFLite question answerer reads one window of "
                f"max_seq_len tokens and returns its best span (top_k=1, "
                f"align_to_words=False) and its logits; apply {name} on the host with "
                f"kbert.pipelines.tflite_entities.answer(context, outputs, row, ...).")
    fast = text_tokenizer(pipe.tokenizer, split_literals=True)
    serve = question_answerer_serving(pipe.tokenizer, fast,
                                      lambda features: run_model(model, features),
                                      max_seq_len, max_answer_len)
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
    extra = {}
    if pipe.task == "fill-mask" and "max_masks" in options:
        options = dict(options)
        extra["max_masks"] = options.pop("max_masks")
    opts, given = pipe.options(options)
    build = {"token-classification": _token_classification,
             "question-answering": _question_answering,
             "zero-shot-classification": _zero_shot_classification,
             "feature-extraction": _feature_extraction,
             "sentence-embeddings": _sentence_embeddings,
             "fill-mask": _fill_mask}.get(pipe.task, _text_classification)
    fast, serve = build(pipe, model, opts, given, **extra)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(fast)
    inputs = [STRINGS, STRINGS] if pipe.task == "question-answering" else [STRINGS]
    archive.add_endpoint("serving_default", serve, inputs)
    return convert(archive, path, quantize)
