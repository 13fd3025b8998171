"""`pipeline.export` of feature-extraction (transformers' contract): each text fitted to the
model as the pipeline fits it -> `features` [B, tokens, hidden] (the backbone's last hidden
states, zero past a text's tokens) and `num_tokens` [B], as `decode.hidden_states` gives
them in Python."""

import tensorflow as tf

from kbert.tasks.graph.signatures import single_text_endpoints


def masked_states(sequence_output, padding_mask):
    """The hidden states [B, S, H] in float32, zero where `padding_mask` is 0."""
    return tf.cast(sequence_output, tf.float32) * \
        tf.cast(padding_mask, tf.float32)[:, :, None]


def feature_extraction(pipe, model, opts, given):
    """`pipeline.export`'s `serving_default` of a feature-extraction pipeline."""
    truncation, max_length = pipe.tokenization(opts, "tokenize_kwargs")

    def outputs(result, features):
        return {"features": masked_states(result["sequence_output"], features["padding_mask"]),
                "num_tokens": tf.reduce_sum(features["padding_mask"], axis=1)}

    return single_text_endpoints(pipe, model, truncation, outputs, max_length)


# `pipeline.export` of each pipeline of the task.
PIPELINES = {"feature-extraction": feature_extraction}
