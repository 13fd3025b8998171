"""`pipeline.export(path, **options)`: a SavedModel whose `serving_default` takes raw strings
and returns the pipeline's answers, every step in the graph (tokenization, truncation, the
model, and the post-processing: softmax / sigmoid and ranking, NLI-to-label scoring, the
masked-token search and decoding, entities
(`kbert.tasks.token_classification.pipeline_serving`), answer spans over a context's windows
(`kbert.tasks.question_answering.pipeline_serving`)), so that TensorFlow Serving answers what
the pipeline answers. It loads with TensorFlow and tensorflow-text alone.

A pipeline's answer is a list of dicts; the SavedModel returns each key as a tensor with a
leading batch dimension, padded where rows differ in length (a `num_*` output says how many
entries of a row are real). The signatures of each task are in `export`'s docstring.
"""

import keras
import tensorflow as tf

from kbert.export.archive import write_archive
from kbert.tasks.graph.signatures import STRINGS, run_model
from kbert.tasks.graph import packing as graph
from kbert.tasks.question_answering.pipeline_serving import question_answering
from kbert.pipelines.model_source import KerasRunner
from kbert.tasks.token_classification.pipeline_serving import token_classification
from kbert.tasks.text_classification import serving as text_classification_serving


def _single_texts(pipe, model, opts, truncation, outputs, max_length=None):
    tokenizer = pipe.tokenizer

    def serve(text):
        first, _, checks = graph.fit_call(pipe, graph.ids(tokenizer, text), None, truncation,
                                          max_length)
        features = graph.pack(tokenizer, first)
        with tf.control_dependencies(checks):
            return outputs(run_model(model, features), features)

    return {"serving_default": (serve, [STRINGS])}


def feature_extraction(pipe, model, opts, given):
    truncation, max_length = pipe.tokenization(opts, "tokenize_kwargs")

    def outputs(result, features):
        mask = tf.cast(features["padding_mask"], tf.float32)[:, :, None]
        return {"features": result["sequence_output"] * mask,
                "num_tokens": tf.reduce_sum(features["padding_mask"], axis=1)}

    return _single_texts(pipe, model, opts, truncation, outputs, max_length)


def sentence_embeddings(pipe, model, opts, given):
    return _single_texts(pipe, model, opts, opts["truncation"],
                         lambda result, features: {"embedding": result})


def fill_mask(pipe, model, opts, given):
    tokenizer, encoder = pipe.tokenizer, pipe.encoder
    top_k, targets = pipe.top_k_and_targets(opts)
    if targets is not None:
        top_k = min(top_k, len(targets))
    top_k = min(top_k, tokenizer.vocabulary_size)
    token_strings = tf.constant([encoder.decode([i])
                                 for i in range(tokenizer.vocabulary_size)])
    special = tf.constant([i in encoder.special_ids for i in range(tokenizer.vocabulary_size)])
    mask_id, pad_id = tokenizer.mask_id, tokenizer.pad_id
    truncation, max_length = pipe.tokenization(opts, "tokenizer_kwargs")
    mask_token = tokenizer.vocabulary[mask_id]

    def serve(text):
        first, _, checks = graph.fit_call(pipe, graph.ids(tokenizer, text), None, truncation,
                                          max_length)
        features = graph.pack(tokenizer, first)
        token_ids = features["token_ids"]
        is_mask = tf.equal(token_ids, mask_id) & (features["padding_mask"] > 0)
        positions = tf.ragged.boolean_mask(
            tf.broadcast_to(tf.range(tf.shape(token_ids)[1]), tf.shape(token_ids)), is_mask)
        num_masks = graph.lengths(positions)
        checks.append(tf.debugging.Assert(tf.reduce_all(num_masks > 0), [
            f"No mask_token ({mask_token}) found on the input"]))
        with tf.control_dependencies(checks):
            logits = run_model(model, {**features, "mask_positions": positions.to_tensor(0)})
        probabilities = tf.nn.softmax(logits["mlm_logits"])  # [B, M, V]
        if targets is not None:
            probabilities = tf.gather(probabilities, targets, axis=-1)
        scores, index = tf.math.top_k(probabilities, k=top_k)  # [B, M, K]
        tokens = index if targets is None else tf.gather(tf.constant(targets, tf.int32),
                                                          index)
        # Each candidate's sequence: the text with that token at its mask.
        masks = tf.shape(scores)[1]
        length = tf.shape(token_ids)[1]
        at_mask = tf.equal(tf.range(length)[None, None, :],
                           positions.to_tensor(-1)[:, :, None])  # [B, M, S]
        filled = tf.where(at_mask[:, :, None, :], tokens[..., None],
                          token_ids[:, None, None, :])  # [B, M, K, S]
        single = tf.equal(num_masks, 1)[:, None, None, None]
        keep = tf.not_equal(filled, pad_id) & ~(single & tf.gather(special, filled))
        keep &= tf.range(masks)[None, :, None, None] < num_masks[:, None, None, None]
        flat = tf.reshape(filled, [-1, length])
        kept = tf.ragged.boolean_mask(flat, tf.reshape(keep, [-1, length]))
        sequences = tf.reshape(tokenizer.graph_decode(kept), tf.shape(scores))
        present = tf.range(masks)[None, :, None] < num_masks[:, None, None]
        return {"score": tf.where(present, scores, 0.0),
                "token": tf.where(present, tokens, -1),
                "token_str": tf.where(present, tf.gather(token_strings, tokens), ""),
                "sequence": tf.where(present, sequences, ""),
                "num_masks": num_masks}

    return {"serving_default": (serve, [STRINGS])}


SERVINGS = {
    "text-classification": text_classification_serving.text_classification,
    "zero-shot-classification": text_classification_serving.zero_shot_classification,
    "feature-extraction": feature_extraction,
    "sentence-embeddings": sentence_embeddings,
    "fill-mask": fill_mask,
    "token-classification": token_classification,
    "question-answering": question_answering,
}


def export(pipe, path, options):
    """Writes `pipe`'s SavedModel to `path` (see `Pipeline.export`); returns `path`."""
    from kbert.export.saved_model import write_tokenizer_files

    if pipe.task not in SERVINGS:
        raise NotImplementedError(f"pipeline.export does not cover {pipe.task} yet; export "
                                  "the task model with kbert.export.export_saved_model.")
    if not isinstance(pipe.source.runner, KerasRunner):
        raise ValueError(f"pipeline.export needs a pipeline on a kbert model or checkpoint; "
                         f"this one runs {pipe.source.name}, which is already a SavedModel.")
    model = pipe.source.runner.model
    opts, given = pipe.options(options)
    endpoints = SERVINGS[pipe.task](pipe, model, opts, given)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(pipe.tokenizer)
    for name, (function, specs) in endpoints.items():
        archive.add_endpoint(name, function, specs)
    write_archive(archive, path)
    write_tokenizer_files(pipe.tokenizer, path)
    return path
