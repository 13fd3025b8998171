"""`pipeline.export` of fill-mask (transformers' contract): the `top_k` likeliest tokens at
every "[MASK]" of a text, each with the text it fills in, as `decode.fill` gives them in
Python: `score`, `token`, `token_str`, `sequence` [B, masks, top_k] (0, -1, "" and "" past a
text's masks) and `num_masks` [B]. A text without a mask fails the call, as the pipeline
refuses it. The graph cannot call the Python rule; the candidates' count comes from the one
place (`decode.candidates`).
"""

import tensorflow as tf

from kbert.tasks.fill_mask.decode import candidates
from kbert.tasks.graph import packing as graph
from kbert.tasks.graph.signatures import STRINGS, run_model


def fill_mask(pipe, model, opts, given):
    tokenizer, encoder = pipe.tokenizer, pipe.encoder
    top_k, targets = pipe.top_k_and_targets(opts)
    top_k = candidates(top_k, targets, tokenizer.vocabulary_size)
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


PIPELINES = {"fill-mask": fill_mask}
