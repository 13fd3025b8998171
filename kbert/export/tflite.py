"""TFLite models with the tokenizer inside: a string in, labels and probabilities (or the
backbone's hidden states) out, on TFLite's built-in ops and tensorflow-text's TFLite kernels
only (`kbert.export.tflite_ops`): no Flex op, no TensorFlow on the device.

The graph is that of a SavedModel signature written for TFLite: tokenization is
tensorflow-text's `FastBertTokenizer` (its normaliser and WordPiece have TFLite kernels,
kbert's regex normalisation has none), and the ragged wordpieces are cut and padded with
`RaggedTensorToTensor` and plain arithmetic, never by slicing a ragged tensor (which adds
`RaggedRange`, an op TFLite has no kernel for).
"""

import os
import tempfile

import keras
import tensorflow as tf
import tensorflow_text as tf_text  # noqa: F401 (registers its ops for the converter)

from kbert.export.archive import write_archive
from kbert.export.tflite_ops import check_ops
from kbert.tasks.graph.tflite_packing import pack_pairs, pack_text  # noqa: F401 (re-exported)
from kbert.models.backbone import Backbone
from kbert.models.pretrainer import Pretrainer
from kbert.tasks import registry
from kbert.tasks.task import Task

QUANTIZE = (None, "dynamic", "float16")
IDS = tf.TensorSpec([None, None], tf.int32)


def text_tokenizer(tokenizer, split_literals=False):
    """The TFLite twin of a kbert `WordPieceTokenizer`: a `tensorflow_text.FastBertTokenizer`
    on the same vocabulary; of a `SentencePieceTokenizer` without ALBERT's preprocessing
    (DeBERTa-v3: its normalisation is in the SentencePiece model) tensorflow-text's
    `FastSentencepieceTokenizer` on the same model; or a ValueError naming the option
    TFLite cannot follow.

    Where the two differ (see `export_tflite`): BERT's normalisation in kbert deletes control
    characters and, uncased, lower-cases as Python does; tensorflow-text's
    normaliser makes those characters spaces and case-folds with NFKC.
    `split_literals`: a tokenizer with `split_special_tokens=False` is taken too, and literals
    are split as text (for a caller that documents it); else such a tokenizer is refused.
    """
    # The tokenizer's own twin, or its ValueError (a byte-level BPE's split, ALBERT's
    # preprocessing: no TFLite kernel).
    fast = tokenizer.tflite_tokenizer()
    if not (tokenizer.split_special_tokens or split_literals):
        raise ValueError(
            "The tokenizer has split_special_tokens=False (a literal \"[SEP]\" in a text gives "
            "the [SEP] id), which needs a regex split that TFLite has no kernel for. Make the "
            "tokenizer with split_special_tokens=True (literals are split as text) to export "
            "it, or export with tokenizer=None (token ids in).")
    return fast


def convert(archive, path, quantize):
    """Writes the ExportArchive `archive` as a TFLite model at `path` with `quantize`; checks
    that it holds no op outside the built-in and tensorflow-text sets. Returns `path`."""
    if quantize not in QUANTIZE:
        raise ValueError(f"quantize={quantize!r}; allowed: None (float32), 'dynamic' (int8 "
                         f"weights, float activations) or 'float16'.")
    with tempfile.TemporaryDirectory() as directory:
        write_archive(archive, directory)
        converter = tf.lite.TFLiteConverter.from_saved_model(directory)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = True  # tensorflow-text's; check_ops refuses any other
        if quantize is not None:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        flatbuffer = converter.convert()
    check_ops(flatbuffer)
    directory = os.path.dirname(os.fspath(path))
    if directory:
        tf.io.gfile.makedirs(directory)
    with tf.io.gfile.GFile(os.fspath(path), "wb") as f:
        f.write(flatbuffer)
    return path


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
            f"ops TFLite has no kernel for); export it with export_saved_model.")
    return record


def export_tflite(model, path, tokenizer=None, quantize=None, sequence_length=None, *,
                  label_names=None, max_answer_length=15, **pipeline_options):
    """Writes a TFLite model (a `.tflite` file) that runs on TFLite's built-in ops and
    tensorflow-text's TFLite kernels (no Flex op).

    With a WordPiece `tokenizer` or DeBERTa-v3's SentencePiece one, `serving_default` takes
    `text` (string [B]) and tokenizes in the model; without one (ALBERT's SentencePiece,
    whose preprocessing has no TFLite kernel, is refused with a message) it
    takes `token_ids`, `segment_ids` (not DistilBERT) and `padding_mask` (int32
    [B, sequence_length]). Outputs: a `TextClassifier` gives what its SavedModel gives
    (`label`, `label_id`, `probabilities`, `logits`; "regression": `score`; "multi_label":
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
    if quantize not in QUANTIZE:
        raise ValueError(f"quantize={quantize!r}; allowed: None (float32), 'dynamic' (int8 "
                         f"weights, float activations) or 'float16'.")
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
        return convert(archive, path, quantize)
    if tokenizer.vocabulary_size != config.vocabulary_size:
        raise ValueError(f"The tokenizer has {tokenizer.vocabulary_size} tokens but the "
                         f"model's vocabulary_size is {config.vocabulary_size}.")
    fast = text_tokenizer(tokenizer)
    archive.track(fast)

    endpoints = graph.model_endpoints(tracked, tokenizer, fast, sequence_length, outputs,
                                      {"label_names": label_names,
                                       "max_answer_length": max_answer_length})
    for name, (function, specs) in endpoints.items():
        archive.add_endpoint(name, function, specs)
    return convert(archive, path, quantize)


def tokenization_differences(tokenizer, characters):
    """The characters of `characters` (a string or an iterable of them) whose ids differ
    between `tokenizer` (kbert's, as in its SavedModels) and its TFLite twin, each tried
    between two words ("a<c>b <c>"). A list of the characters, in the order given."""
    characters = list(characters)
    fast = text_tokenizer(tokenizer)
    texts = tf.constant([f"a{c}b {c}" for c in characters])
    ours = tokenizer.tokenize(texts).to_list()
    theirs = fast.tokenize(texts).to_list()
    return [c for c, a, b in zip(characters, ours, theirs) if a != b]


def interpreter(path):
    """An `ai_edge_litert` interpreter on the TFLite model at `path` with tensorflow-text's
    kernels registered (what an app on the device does, in Python). Needs the
    `ai-edge-litert` package (in kbert's test extra; not a dependency of kbert)."""
    from ai_edge_litert.interpreter import InterpreterWithCustomOps
    from tensorflow_text.core.pybinds import tflite_registrar

    return InterpreterWithCustomOps(model_path=os.fspath(path),
                                    custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS)
