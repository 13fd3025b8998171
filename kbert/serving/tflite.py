"""TFLite models with the tokenizer inside: a string in, labels and probabilities (or the
backbone's hidden states) out, on TFLite's built-in ops and tensorflow-text's TFLite kernels
only (`kbert.serving.runtimes`): no Flex op, no TensorFlow on the device.

The graph is that of a SavedModel signature written for TFLite: tokenization is
tensorflow-text's `FastBertTokenizer` (its normaliser and WordPiece have TFLite kernels,
kbert's regex normalisation has none), and the ragged wordpieces are cut and padded with
`RaggedTensorToTensor` and plain arithmetic, never by slicing a ragged tensor (which adds
`RaggedRange`, an op TFLite has no kernel for).
"""

import keras
import tensorflow as tf

from kbert.models.backbone import Backbone
from kbert.models.pretrainer import Pretrainer
from kbert.serving import metadata, writer
from kbert.serving.runtimes import check_quantize, tflite_tokenizer
from kbert.tasks import registry
from kbert.tasks.task import Task

def _backbone_of(model):
    if isinstance(model, Task):
        return model.backbone
    if isinstance(model, Backbone):
        return model
    if isinstance(model, Pretrainer) and isinstance(getattr(model, "backbone", None),
                                                    Backbone):
        return model.backbone
    raise TypeError(f"export_tflite takes a backbone, a pretrainer (its backbone is exported), "
                    f"a {', '.join(r.model.__name__ for r in _task_records())}, or a "
                    f"pipeline; got {type(model).__name__}.")


def _task_records():
    return tuple(r for r in registry.task_models() if "tflite" in r.exports)


def _record_of(model):
    """The task record whose folder's `tflite` exports `model`: its task's for a task model,
    feature extraction's (the backbone's hidden states) for a backbone or a pretrainer."""
    if not isinstance(model, Task):
        return registry.BACKBONE
    record = registry.of_model(model)
    if record is None or "tflite" not in record.exports:
        raise NotImplementedError(
            f"export_tflite does not export a {type(model).__name__} yet (its decoding needs "
            f"ops TFLite has no kernel for); export it as a SavedModel with model.export(path) "
            f"(kbert.export).")
    return record


def export_tflite(model, path, tokenizer=None, quantize=None, sequence_length=None, *,
                  label_names=None, max_answer_length=15, **pipeline_options):
    """Writes a TFLite model (a `.tflite` file) that runs on TFLite's built-in ops and
    tensorflow-text's TFLite kernels (no Flex op).

    With a WordPiece `tokenizer` or DeBERTa-v3's SentencePiece one, `serving_default` takes
    `text` (string [B]) and tokenizes in the model; without one (ALBERT's SentencePiece,
    whose preprocessing has no TFLite kernel, is refused with a message) it
    takes `token_ids`, `segment_ids` (not DistilBERT) and `padding_mask` (int32
    [B, sequence_length]). Outputs (kbert's TFLite contract; `model.export(path,
    format="tflite")` writes the pipeline's answers instead): a `TextClassifier` gives
    `label`, `label_id`, `probabilities`, `logits` ("regression": `score`; "multi_label":
    `num_labels` and `labels`, every class name with the chosen first), and with text also
    `serving_pairs` (`text_a`, `text_b`, trimmed round-robin), a `TextEmbedder`
    `embedding`, a backbone or pretrainer the backbone's `sequence_output` and
    `pooled_output` (and `padding_mask` from text). A `TokenClassifier` gives every
    position's `label`, `label_id`, `probabilities`, `logits`, `tokens`, `token_ids`,
    `padding_mask` and the piece's UTF-8 byte `starts` / `ends` in the text (-1 off the
    text); a `QuestionAnswerer` takes `question` and `context` and gives one window's
    `start_logits`, `end_logits`, `tokens`, byte `starts` / `ends` in the context and the
    best span of at most `max_answer_length` pieces: `answer_start`, `answer_end` (bytes)
    and `score` (`kbert.tasks.question_answering.tflite`). Text is cut at `sequence_length`
    wordpieces (a context past the window is cut: one window only).

    Tokenization is tensorflow-text's `FastBertTokenizer`, which kbert's SavedModels do not
    use: its ids equal kbert's on letters, digits, punctuation, accents, CJK, emoji and long
    text (tested), and differ on: control characters (NUL, BEL), which become spaces
    instead of being deleted (format characters are deleted by both); private-use and unassigned
    characters and U+FFFD, kept; uncased, NFKC compatibility characters and full case folding
    ("ﬁ" -> "fi", full-width letters, "ß" -> "ss", final sigma); cased, NFC's canonical
    singletons (CJK compatibility ideographs); a few letters newer than tensorflow-text's
    ICU; and a word of multi-byte characters, which becomes [UNK] past `max_chars_per_word`
    bytes rather than characters. `tokenization_differences` lists the characters where the
    ids differ for a tokenizer. A tokenizer option TFLite cannot follow
    (`split_special_tokens=False`, SentencePiece) is refused.

    Args:
        model: a backbone, a pretrainer (its backbone), a `TextClassifier`, a
            `TextEmbedder`, a `TokenClassifier` or a `QuestionAnswerer`; or a pipeline (`kbert.pipeline`): `pipe.export_tflite`.
        path: the `.tflite` file.
        tokenizer: the model's `WordPieceTokenizer` (text in), or None (ids in).
        quantize: None (float32), "dynamic" (int8 weights, float activations: about a
            quarter of the size) or "float16" (half the size).
        sequence_length: the fixed length of the model's inputs (default: the model's
            `max_sequence_length`).
        label_names: a `TextClassifier`'s or `TokenClassifier`'s class names (default: the
            model's).
        max_answer_length: a `QuestionAnswerer`'s longest answer, in pieces.
        pipeline_options: a pipeline's call options (see `pipe.export_tflite`).

    Returns:
        `path`.
    """
    if callable(getattr(model, "export_tflite", None)):  # a pipeline
        if tokenizer is not None or sequence_length is not None or label_names is not None:
            raise ValueError("A pipeline has its tokenizer, length and labels: pass only its "
                             "call options.")
        return model.export_tflite(path, quantize=quantize, **pipeline_options)
    if pipeline_options:
        raise TypeError(f"export_tflite got unexpected arguments "
                        f"{', '.join(sorted(pipeline_options))} (call options are for "
                        f"pipelines).")
    check_quantize(quantize)
    backbone = _backbone_of(model)
    config = backbone.config
    sequence_length = config.max_sequence_length if sequence_length is None else sequence_length
    if isinstance(sequence_length, bool) or not isinstance(sequence_length, int) or \
            not 3 <= sequence_length <= config.max_sequence_length:
        raise ValueError(f"sequence_length must be an integer in [3, "
                         f"{config.max_sequence_length}] (the model's max_sequence_length), "
                         f"got {sequence_length!r}.")
    if isinstance(max_answer_length, bool) or not isinstance(max_answer_length, int) or \
            max_answer_length < 1:
        raise ValueError(f"max_answer_length must be a positive integer, got "
                         f"{max_answer_length!r}.")
    record = _record_of(model)
    if label_names is not None and not record.labelled:
        labelled = " or a ".join(r.model.__name__ for r in _task_records() if r.labelled)
        raise ValueError(f"label_names is for a {labelled}, not a {type(model).__name__}.")
    tracked = model if isinstance(model, Task) else backbone
    graph = record.module("tflite")
    outputs = graph.model_outputs(tracked, label_names)
    archive = keras.export.ExportArchive()
    archive.track(tracked)
    segments = "segment_ids" in backbone.input
    meta = metadata.describe(
        runtime="tflite", task=record.name, model=record.name,
        label_names=(label_names or getattr(tracked, "label_names", None))
        if record.labelled else None,
        problem_type=getattr(tracked, "problem_type", None), max_length=sequence_length,
        options={"max_answer_length": max_answer_length} if record.name == "question_answerer"
        else {}, tokenizer=tokenizer, text_in=tokenizer is not None)
    if tokenizer is None:
        def serve_ids(token_ids, segment_ids, padding_mask):
            return outputs({"token_ids": token_ids, "segment_ids": segment_ids,
                            "padding_mask": padding_mask})

        def serve_ids_without_segments(token_ids, padding_mask):
            return outputs({"token_ids": token_ids, "padding_mask": padding_mask})

        fixed = tf.TensorSpec([None, sequence_length], tf.int32)
        if segments:
            archive.add_endpoint("serving_default", serve_ids, [fixed] * 3)
        else:
            archive.add_endpoint("serving_default", serve_ids_without_segments, [fixed] * 2)
        return writer.tflite(archive, path, meta, quantize)
    if tokenizer.vocabulary_size != config.vocabulary_size:
        raise ValueError(f"The tokenizer has {tokenizer.vocabulary_size} tokens but the "
                         f"model's vocabulary_size is {config.vocabulary_size}.")
    fast = tflite_tokenizer(tokenizer)
    archive.track(fast)

    endpoints = graph.model_endpoints(tracked, tokenizer, fast, sequence_length, outputs,
                                      {"label_names": label_names,
                                       "max_answer_length": max_answer_length})
    for name, (function, specs) in endpoints.items():
        archive.add_endpoint(name, function, specs)
    return writer.tflite(archive, path, meta, quantize)


def tokenization_differences(tokenizer, characters):
    """The characters of `characters` (a string or an iterable of them) whose ids differ
    between `tokenizer` (kbert's, as in its SavedModels) and its TFLite twin, each tried
    between two words ("a<c>b <c>"). A list of the characters, in the order given."""
    characters = list(characters)
    fast = tflite_tokenizer(tokenizer)
    texts = tf.constant([f"a{c}b {c}" for c in characters])
    ours = tokenizer.tokenize(texts).to_list()
    theirs = fast.tokenize(texts).to_list()
    return [c for c, a, b in zip(characters, ours, theirs) if a != b]
