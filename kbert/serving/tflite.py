"""TFLite models of token ids (`export_tflite`), and the characters where a tokenizer's
TFLite twin gives other ids than kbert's (`tokenization_differences`; docs/devices.md,
"Tokenization in TFLite", lists them)."""

import keras
import tensorflow as tf

from kbert.models.pretrainer import Pretrainer
from kbert.serving import metadata, writer
from kbert.serving.runtimes import check_quantize, tflite_tokenizer
from kbert.tasks import registry
from kbert.tasks.graph.signatures import RAW_OUTPUTS, add_ids_endpoint, raw_outputs


def _raw_model(model):
    """(the model whose raw outputs are exported, its kind): a pretrainer's backbone."""
    if isinstance(model, Pretrainer):
        model = model.backbone
    record = registry.of_model(model)
    if record is None or record.name not in RAW_OUTPUTS:
        kinds = ", ".join(sorted(RAW_OUTPUTS))
        raise TypeError(f"export_tflite takes a kbert model with raw outputs (a {kinds}, or "
                        f"a pretrainer: its backbone), not {type(model).__name__}.")
    return model, record.name


def export_tflite(model, path, *, quantize=None, sequence_length=None):
    """Writes a `.tflite` file of `model` on TFLite's built-in ops (no Flex op) whose one
    signature, `serving_ids`, takes `token_ids`, `segment_ids` (not DistilBERT's) and
    `padding_mask` (int32 [B, sequence_length]) and returns the model's raw outputs in
    float32: `logits` (a classifier, a token classifier, a summarizer), `start_logits` and
    `end_logits` (a question answerer), `embedding` (a `TextEmbedder`), `sequence_output`
    and `pooled_output` (a backbone, or a pretrainer's): for a tokenizer with no TFLite twin
    (ALBERT's) or ids made on the host. Text in: `kbert.export(model, path,
    format="tflite")`, which writes this signature beside the pipeline's.

    Args:
        model: a task model, a backbone, or a pretrainer (its backbone).
        path: the `.tflite` file.
        quantize: None (float32), "dynamic" (int8 weights, float activations: about a
            quarter of the size) or "float16" (half the size).
        sequence_length: the fixed length of the inputs (default: the model's
            `max_sequence_length`).

    Returns:
        `path`.
    """
    check_quantize(quantize)
    model, kind = _raw_model(model)
    config = model.backbone.config if kind != "backbone" else model.config
    longest = config.max_sequence_length
    sequence_length = longest if sequence_length is None else sequence_length
    if isinstance(sequence_length, bool) or not isinstance(sequence_length, int) or \
            not 3 <= sequence_length <= longest:
        raise ValueError(f"sequence_length must be an integer in [3, {longest}] (the model's "
                         f"max_sequence_length), got {sequence_length!r}.")
    archive = keras.export.ExportArchive()
    archive.track(model)
    add_ids_endpoint(archive, model, raw_outputs(model, kind), sequence_length)
    meta = metadata.describe(
        runtime="tflite", task=kind, model=kind,
        label_names=getattr(model, "label_names", None),
        problem_type=getattr(model, "problem_type", None), max_length=sequence_length)
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
