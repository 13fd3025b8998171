"""SavedModels with the tokenizer inside: raw strings in, model outputs out.

The SavedModel needs only TensorFlow and tensorflow-text to load (`import tensorflow_text`
registers the tokenizer's ops); not kbert, not Keras, not keras-hub. Tokenization, packing
into [CLS] A [SEP] (B [SEP]), truncation and padding all run inside the graph.
"""

import re

import keras
import tensorflow as tf

from kbert.models.backbone import Backbone
from kbert.models.bert.bert_pretrainer import BertPretrainer
from kbert.models.pretrainer import Pretrainer
from kbert.serving import metadata, writer
from kbert.tasks import registry
from kbert.tasks.graph.signatures import BACKBONE_OUTPUTS
from kbert.tasks.task import Task

MASK_TOKEN = "[MASK]"


def _check(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")


def tokenize_with_masks(tokenizer, text):
    """Wordpiece ids of `text` [batch], where each literal "[MASK]" becomes the mask id.

    The tokenizer's normaliser would split "[MASK]" into "[", "mask", "]", so the text is
    split on it first and the pieces are joined again around the mask id. A tokenizer whose
    mask takes the whitespace before it along (byte-level BPE: RoBERTa's "<mask>" is
    "Ġword"'s stand-in) gets the text before each mask without its trailing whitespace, or
    that space would be a token of its own ("Ġ") that training never put before a mask.
    """
    if getattr(tokenizer, "left_stripped", ()):
        text = tf.strings.regex_replace(
            text, f"{tokenizer.left_strip_class}+{re.escape(MASK_TOKEN)}", MASK_TOKEN)
    pieces = tf.strings.split(text, sep=MASK_TOKEN)  # [batch, (masks + 1)]
    ids = tokenizer.tokenize(pieces.flat_values)  # [pieces, (wordpieces)]
    per_row = pieces.row_lengths()
    index_in_row = tf.ragged.range(per_row).flat_values
    last_in_row = tf.repeat(per_row - 1, per_row)
    masks_after = tf.cast(index_in_row < last_in_row, tf.int64)  # 1 after all but the last
    mask_ids = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(masks_after)], tf.constant(tokenizer.mask_id, tf.int32)),
        masks_after,
    )
    joined = tf.concat([ids, mask_ids], axis=1)
    return tf.RaggedTensor.from_row_lengths(joined, per_row).merge_dims(1, 2)


def _backbone_of(model):
    if isinstance(model, Backbone):
        return model
    if isinstance(model, Pretrainer) and isinstance(getattr(model, "backbone", None),
                                                    Backbone):
        return model.backbone
    raise TypeError(
        f"export_saved_model takes a backbone (BertBackbone, AlbertBackbone, ...) or a "
        f"pretrainer with one (BertPretrainer, ElectraPretrainer, ...); got "
        f"{type(model).__name__}."
    )


def export_saved_model(model, path, tokenizer, sequence_length=None, top_k=5, max_masks=8,
                       write_vocabulary=True):
    """Writes a backbone's SavedModel (or a pretrainer's: its backbone, and a masked-LM head's
    `fill_mask`) for TensorFlow Serving and plain `tf.saved_model.load`. A task model
    exports as its pipeline answers: `model.export(path)` (`kbert.export`).

    Signatures (inputs -> outputs):
      - `serving_default`: `text` (string [batch]) -> the backbone's `sequence_output`
        [batch, sequence_length, hidden] and `pooled_output` [batch, hidden] (not for
        families without a pooler), and the `padding_mask` [batch, sequence_length] that
        says which positions are text;
      - `serving_pairs`: `text_a`, `text_b` (string [batch] each) -> the same, for sentence
        pairs packed as [CLS] A [SEP] B [SEP];
      - `serving_ids`: `token_ids`, `segment_ids`, `padding_mask` (int32 [batch, length];
        no `segment_ids` for DistilBERT) -> the backbone's outputs (batched or TPU serving,
        ids made elsewhere);
      - `fill_mask` (a `BertPretrainer` or its subclasses: a masked-LM head on the
        backbone): `text` with "[MASK]" in it ->
        `tokens` (string [batch, max_masks, top_k]), `token_ids` (int32, same shape),
        `scores` (float32 softmax probabilities, same shape) for each mask in order, and
        `num_masks` (int32 [batch]). Rows past `num_masks` hold "", -1 and 0.

    Text longer than `sequence_length` pieces is truncated (pairs round-robin).

    Args:
        model: a backbone, or a pretrainer: its backbone is exported (for
            `ElectraPretrainer` the discriminator), and a `BertPretrainer`'s masked-LM head
            adds `fill_mask`.
        path: the SavedModel directory.
        tokenizer: the model's tokenizer (`kbert.tokenizers`).
        sequence_length: padded length of the string signatures (default: the model's
            `max_sequence_length`).
        top_k, max_masks: the shape of `fill_mask`'s outputs.
        write_vocabulary: also write the tokenizer's files beside `saved_model.pb`.
    """
    if isinstance(model, Task):
        raise TypeError(f"export_saved_model writes backbones and pretrainers; a "
                        f"{type(model).__name__} exports as its pipeline answers: "
                        f"model.export(path) (kbert.export).")
    backbone = _backbone_of(model)
    config = backbone.config
    sequence_length = config.max_sequence_length if sequence_length is None else sequence_length
    _check("sequence_length", sequence_length, 4)
    if sequence_length > config.max_sequence_length:
        raise ValueError(
            f"sequence_length={sequence_length} is longer than the model's "
            f"max_sequence_length={config.max_sequence_length}."
        )
    _check("top_k", top_k, 1)
    _check("max_masks", max_masks, 1)
    if tokenizer.vocabulary_size != config.vocabulary_size:
        raise ValueError(
            f"The tokenizer has {tokenizer.vocabulary_size} tokens but the model's "
            f"vocabulary_size is {config.vocabulary_size}."
        )
    top_k = min(top_k, config.vocabulary_size)
    files = tokenizer if write_vocabulary else None

    def encode(inputs):
        outputs = backbone({name: inputs[name] for name in backbone.input}, training=False)
        return {name: tf.cast(outputs[name], tf.float32) for name in BACKBONE_OUTPUTS
                if name in outputs}

    def serve_text(text):
        inputs = tokenizer.pack([tokenizer.tokenize(text)], sequence_length)
        return {**encode(inputs), "padding_mask": inputs["padding_mask"]}

    def serve_pairs(text_a, text_b):
        inputs = tokenizer.pack([tokenizer.tokenize(text_a), tokenizer.tokenize(text_b)],
                      sequence_length)
        return {**encode(inputs), "padding_mask": inputs["padding_mask"]}

    def serve_ids(token_ids, segment_ids, padding_mask):
        return encode({"token_ids": token_ids, "segment_ids": segment_ids,
                       "padding_mask": padding_mask})

    def serve_ids_without_segments(token_ids, padding_mask):
        return encode({"token_ids": token_ids, "padding_mask": padding_mask})

    string_batch = tf.TensorSpec([None], tf.string)
    ids_batch = tf.TensorSpec([None, None], tf.int32)
    archive = keras.export.ExportArchive()
    archive.track(backbone)
    archive.track(tokenizer)
    archive.add_endpoint("serving_default", serve_text, [string_batch])
    archive.add_endpoint("serving_pairs", serve_pairs, [string_batch, string_batch])
    if "segment_ids" in backbone.input:
        archive.add_endpoint("serving_ids", serve_ids, [ids_batch, ids_batch, ids_batch])
    else:
        archive.add_endpoint("serving_ids", serve_ids_without_segments, [ids_batch, ids_batch])

    if isinstance(model, BertPretrainer):
        vocabulary = tf.constant(tokenizer.vocabulary)

        def fill_mask(text):
            inputs = tokenizer.pack([tokenize_with_masks(tokenizer, text)], sequence_length)
            is_mask = tf.equal(inputs["token_ids"], tokenizer.mask_id)
            positions = tf.ragged.boolean_mask(
                tf.broadcast_to(tf.range(sequence_length), tf.shape(is_mask)), is_mask
            )
            num_masks = tf.minimum(tf.cast(positions.row_lengths(), tf.int32), max_masks)
            positions = positions[:, :max_masks].to_tensor(0, shape=[None, max_masks])
            features = {name: inputs[name] for name in model.input if name in inputs}
            outputs = model({**features, "mask_positions": positions}, training=False)
            probabilities = tf.nn.softmax(tf.cast(outputs["mlm_logits"], tf.float32))
            scores, ids = tf.math.top_k(probabilities, k=top_k)
            present = tf.sequence_mask(num_masks, max_masks)[:, :, None]
            ids = tf.where(present, ids, -1)
            return {
                "tokens": tf.where(present, tf.gather(vocabulary, tf.maximum(ids, 0)), ""),
                "token_ids": ids,
                "scores": tf.where(present, scores, 0.0),
                "num_masks": num_masks,
            }

        archive.track(model)
        archive.add_endpoint("fill_mask", fill_mask, [string_batch])

    meta = metadata.describe(
        runtime="saved_model", task=getattr(registry.of_model(model), "name", "backbone"),
        model="backbone",
        max_length=config.max_sequence_length, tokenizer=tokenizer,
        options={"top_k": top_k, "max_masks": max_masks}
        if isinstance(model, BertPretrainer) else {}, sequence_length=sequence_length)
    return writer.saved_model(archive, path, meta, files)
