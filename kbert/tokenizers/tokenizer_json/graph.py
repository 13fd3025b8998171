"""`Encoder.encode` of a tokenizer.json's tokenizer (`tokenizer`) in the TensorFlow graph,
for `pipeline.export`: each text's ids with the characters of each token in the text as
given, special-token literals as their tokens.

As in Python (`JsonTokenizer.offset_words` / `word_offsets`): the text is cut at the
pipeline's special literals, then at the added tokens matched in the raw text; the rest is
normalised (with each normalised character's origin, `normalizers.graph_normalize`),
cut at the added tokens matched in the normalised text, and pre-tokenized (a byte-level BPE:
GPT-2's pieces; a byte-fallback one: none). A token covers the characters its normalised
bytes come from, less the spaces of its "Ġ" where the tokenizer trims offsets. A word is a
GPT-2 piece or an added token (byte-level), or the text between raw added tokens
(byte-fallback).
"""

import tensorflow as tf

from kbert.tokenizers.byte_level import WORD_START, pre_tokenize
from kbert.tokenizers.bpe.graph import _split, _utf8_lengths
from kbert.tokenizers.literals_graph import part_starts, with_literals
from kbert.tokenizers.tokenizer_json.normalizers import graph_normalize


def _flat_starts(ragged):
    """int32 [flat]: each string's first character within its row (`part_starts`)."""
    return part_starts(ragged)[0]


def _nested(outer, inner):
    """Ragged [outer rows, (inner values)] of `inner` (ragged [outer values, (x)]) merged."""
    return outer.with_flat_values(inner).merge_dims(1, 2)


def _piece_tokens(tokenizer, pieces, codes, base, origin_row, origin, segment_end):
    """Per token of `pieces` (flat normalised strings with `codes` their code points and
    `base` each one's first normalised character in its raw segment, `origin_row` the raw
    segment): ids ragged [pieces, (tokens)] and flat int32 starts / ends in the segment's
    original characters."""
    ids = tf.cast(tokenizer._normalized_ids(pieces), tf.int32)
    flat = ids.flat_values
    token_piece = tf.cast(ids.value_rowids(), tf.int32)
    char_piece = tf.cast(codes.value_rowids(), tf.int32)
    char_in_piece = tf.range(tf.size(codes.flat_values)) - tf.gather(
        tf.cast(codes.row_starts(), tf.int32), char_piece)
    owner = tf.concat([tf.repeat(char_in_piece, _utf8_lengths(codes.flat_values)), [0]], 0)
    lengths = tf.gather(tf.constant(tokenizer.token_sizes, tf.int32), flat)
    first_byte = tf.cumsum(lengths, exclusive=True) - tf.gather(
        tf.cumsum(tf.math.unsorted_segment_sum(lengths, token_piece, tf.size(pieces)),
                  exclusive=True), token_piece)
    byte_start = tf.gather(tf.cumsum(tf.strings.length(pieces), exclusive=True), token_piece)
    a = tf.gather(owner, byte_start + first_byte)
    b = tf.gather(owner, byte_start + tf.maximum(first_byte + lengths - 1, 0)) + 1
    if tokenizer.trim_offsets:
        vocabulary = tokenizer.vocabulary
        lead = tf.gather(tf.constant([len(t) - len(t.lstrip(WORD_START)) for t in vocabulary],
                                     tf.int32), flat)
        trail = tf.gather(tf.constant([len(t) - len(t.rstrip(WORD_START))
                                       for t in vocabulary], tf.int32), flat)
        a = tf.where(lead > 0, tf.minimum(a + lead, b), a)
        b = tf.where((trail > 0) & (b >= trail), tf.maximum(b - trail, a), b)
    base = tf.gather(base, token_piece)
    row = tf.gather(origin_row, token_piece)
    return ids, _original(a + base, b + base, row, origin, segment_end)


def _original(a, b, row, origin, segment_end):
    """Normalised character spans [a, b) of raw segments `row` -> their original characters:
    from the origin of a (the segment's end past its last) to one past the origin of b - 1."""
    count = tf.gather(tf.cast(origin.row_lengths(), tf.int32), row)
    offset = tf.gather(tf.cast(origin.row_starts(), tf.int32), row)
    values = tf.concat([origin.flat_values, [0]], 0)
    start = tf.where(a < count, tf.gather(values, offset + tf.minimum(a, count - 1)),
                     tf.gather(segment_end, row))
    end = tf.where(b > a, tf.gather(values, offset + tf.maximum(b - 1, 0)) + 1, start)
    return start, end


def encode(text, tokenizer, specials):
    """Valid UTF-8 strings [B] -> the dict of `Tokenizer.graph_encode`: ragged [B, (tokens)]
    `ids`, `starts`, `ends`, `literal`, `words`, and the texts' `codes`. (Invalid UTF-8 is
    repaired first, as `tokenize` repairs it.)"""
    text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace")
    parts, part_special = _split(text, tokenizer, specials)  # [B, (parts)]
    part_start, _ = part_starts(parts)
    is_literal = part_special >= 0
    raw, raw_ids = tokenizer.added.graph_split(tf.where(is_literal, "", parts.flat_values),
                                               "raw")  # [P, (segments)]
    raw_start = _flat_starts(raw)
    raw_chars = tf.strings.length(raw.flat_values, unit="UTF8_CHAR")
    is_raw_token = raw_ids >= 0
    normalized, origin = graph_normalize(tf.where(is_raw_token, "", raw.flat_values),
                                         tokenizer.normalizer, tokenizer.prepend)
    subs, sub_ids = tokenizer.added.graph_split(normalized, "normalized")  # [R, (subs)]
    sub_start = _flat_starts(subs)
    sub_row = tf.cast(subs.value_rowids(), tf.int32)
    sub_chars = tf.strings.length(subs.flat_values, unit="UTF8_CHAR")
    is_sub_token = sub_ids >= 0
    sub_text = tf.where(is_sub_token, "", subs.flat_values)
    segment_end = raw_chars
    if tokenizer.gpt2_pieces:
        pieces = pre_tokenize(sub_text)  # [S, (pieces)]
    else:
        pieces = tf.ragged.boolean_mask(tf.RaggedTensor.from_tensor(sub_text[:, None]),
                                        tf.strings.length(sub_text)[:, None] > 0)
    piece_sub = tf.cast(pieces.value_rowids(), tf.int32)
    codes = tf.strings.unicode_decode(pieces.flat_values, "UTF-8")
    base = tf.gather(sub_start, piece_sub) + _flat_starts(pieces)
    ids, (starts, ends) = _piece_tokens(tokenizer, pieces.flat_values, codes, base,
                                        tf.gather(sub_row, piece_sub), origin, segment_end)
    # Sub-segment level: each text sub-segment's tokens, or its added token.
    sub_a, sub_b = _original(sub_start, sub_start + sub_chars, sub_row, origin, segment_end)
    total_pieces = tf.size(pieces.flat_values)
    values = {
        "ids": (ids.flat_values, sub_ids),
        "starts": (starts, sub_a),
        "ends": (ends, sub_b),
        "key": (tf.cast(ids.value_rowids(), tf.int32),
                total_pieces + tf.range(tf.size(sub_ids))),
    }
    if not tokenizer.gpt2_pieces:  # a byte-fallback BPE: the text between raw tokens is a word
        values["key"] = (tf.gather(sub_row, tf.gather(piece_sub, tf.cast(
            ids.value_rowids(), tf.int32))), sub_row)
    level = {}
    for name, (text_values, token_values) in values.items():
        per_sub = _nested(pieces, ids.with_flat_values(text_values))  # [S, (tokens)]
        level[name] = tf.concat([per_sub, tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(token_values, is_sub_token), tf.cast(is_sub_token, tf.int64))],
            axis=1)
    # Raw-segment level: its sub-segments' tokens, or its added token; then the text parts'.
    raw_count = tf.size(raw_ids)
    raw_values = {"ids": raw_ids, "starts": tf.zeros_like(raw_ids), "ends": raw_chars,
                  "key": total_pieces + tf.size(sub_ids) + tf.range(raw_count)}
    flat = {}
    for name, value in level.items():
        per_raw = _nested(subs, value)  # [R, (tokens)]
        per_raw = tf.concat([per_raw, tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(raw_values[name], is_raw_token), tf.cast(is_raw_token, tf.int64))],
            axis=1)
        if name in ("starts", "ends"):
            per_raw = per_raw.with_flat_values(per_raw.flat_values + tf.gather(
                raw_start, tf.cast(per_raw.value_rowids(), tf.int32)))
        flat[name] = per_raw
    per_part = {name: _nested(raw, value) for name, value in flat.items()}  # [P, (tokens)]
    row_of = tf.cast(per_part["ids"].value_rowids(), tf.int32)
    key = per_part["key"].flat_values  # one per word, unique in the batch
    new_word = tf.concat([[True], tf.not_equal(key[1:], key[:-1])], 0)
    words = tf.cumsum(tf.cast(new_word, tf.int32)) - 1
    count = tf.size(key)
    token_parts = tf.RaggedTensor.from_row_splits(tf.range(count), per_part["ids"].row_splits,
                                                  validate=False)
    return with_literals(text, parts, part_special, token_parts, {
        "ids": per_part["ids"].flat_values,
        "starts": per_part["starts"].flat_values + tf.gather(part_start, row_of),
        "ends": per_part["ends"].flat_values + tf.gather(part_start, row_of),
        "words": words})
