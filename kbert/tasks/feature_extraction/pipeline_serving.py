"""`pipeline.export` of feature-extraction (transformers' contract): each text fitted to the
model as the pipeline fits it -> `features` [B, tokens, hidden] (the backbone's last hidden
states, zero past a text's tokens) and `num_tokens` [B], as `decode.hidden_states` gives
them in Python."""

import tensorflow as tf

from kbert.tasks.graph.signatures import single_text_endpoints


def hidden_states(result, features):
    """The backbone's outputs `result` on the packed `features` -> `features` (its last
    hidden states in float32, zero where `padding_mask` is 0) and `num_tokens`."""
    mask = features["padding_mask"]
    states = tf.cast(result["sequence_output"], tf.float32) * tf.cast(mask, tf.float32)[:, :, None]
    return {"features": states, "num_tokens": tf.reduce_sum(mask, axis=1)}


def feature_extraction(pipe, model, opts, given):
    """`pipeline.export`'s `serving_default` of a feature-extraction pipeline."""
    truncation, max_length = pipe.tokenization(opts, "tokenize_kwargs")
    return single_text_endpoints(pipe, model, truncation, hidden_states, max_length)


PIPELINES = {"feature-extraction": feature_extraction}
