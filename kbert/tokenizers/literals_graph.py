"""Special-token literals typed in a text, in the TensorFlow graph: the text cut before and
after each, as the pipelines' encoder (`kbert.tokenizers.encoding.Encoder`) cuts it."""

import re

import tensorflow as tf

FENCE = b"\xff"  # never in UTF-8


def split_at_literals(text, specials):
    """Strings [B] -> ragged [B, (parts)] strings cut before and after every special-token
    literal of `specials` ({literal: id}, the pipeline's: exact matches, the longest first,
    as `Encoder.encode`), and int32 [parts]: each part's special id, -1 for text."""
    if not specials:
        parts = tf.RaggedTensor.from_tensor(text[:, None])
        return parts, -tf.ones_like(parts.flat_values, tf.int32)
    literals = "|".join(re.escape(s) for s in sorted(specials, key=len, reverse=True))
    # Fenced with a byte that valid UTF-8 never holds, then split on it.
    fenced = tf.strings.regex_replace(text, f"({literals})", FENCE + rb"\1" + FENCE)
    parts = tf.strings.split(fenced, FENCE)
    special = -tf.ones_like(parts.flat_values, tf.int32)
    for literal, token_id in specials.items():
        special = tf.where(tf.equal(parts.flat_values, literal), token_id, special)
    return parts, special
