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


def part_starts(parts):
    """int32 [parts]: each part's first character (code point) in its text, and its length."""
    part_chars = tf.strings.length(parts.flat_values, unit="UTF8_CHAR")
    before = tf.cumsum(part_chars, exclusive=True)
    first_part = tf.gather(tf.cast(parts.row_starts(), tf.int32),
                           tf.cast(parts.value_rowids(), tf.int32))
    return before - tf.gather(tf.concat([before, [0]], 0), first_part), part_chars


def with_literals(text, parts, special, token_parts, values):
    """A `graph_encode` dict (ragged [B, (tokens)] `ids`, `starts`, `ends`, `literal`,
    `words`, and the texts' `codes`): the tokens of the text parts and the special literals
    between them, in order.

    Args:
        text: the strings [B] that `parts` (ragged [B, (parts)]) and `special` (int32
            [parts]: the part's special id, -1 for text) cut (`split_at_literals`).
        token_parts: ragged [parts, (tokens)]: the flat indices into `values` of each text
            part's tokens (none for a literal part).
        values: flat per token of the text parts: `ids`, `starts`, `ends` (code points in
            the text), `words` (int32).
    """
    is_special = special >= 0
    count = tf.size(values["ids"])
    literal_index = count + tf.cumsum(tf.cast(is_special, tf.int32), exclusive=True)
    token_parts = tf.concat([token_parts, tf.RaggedTensor.from_row_lengths(
        tf.boolean_mask(literal_index, is_special), tf.cast(is_special, tf.int64))], axis=1)
    tokens = parts.with_flat_values(token_parts).merge_dims(1, 2)  # [B, (tokens)]
    part_start, part_chars = part_starts(parts)
    literal_start = tf.boolean_mask(part_start, is_special)
    literal_ids = tf.boolean_mask(special, is_special)
    flat = {
        "ids": tf.concat([tf.cast(values["ids"], tf.int32), literal_ids], 0),
        "starts": tf.concat([values["starts"], literal_start], 0),
        "ends": tf.concat([values["ends"],
                           literal_start + tf.boolean_mask(part_chars, is_special)], 0),
        "literal": tf.concat([tf.zeros([count], tf.bool), tf.ones_like(literal_ids, tf.bool)],
                             0),
        "words": tf.concat([values["words"], -tf.ones_like(literal_ids)], 0)}
    out = {name: tokens.with_flat_values(tf.gather(value, tokens.flat_values))
           for name, value in flat.items()}
    out["codes"] = tf.strings.unicode_decode(text, "UTF-8")
    return out
