"""`Encoder.encode` of a byte-level BPE (RoBERTa) tokenizer in the TensorFlow graph, for
`pipeline.export`: each text's ids with the characters of each token in the text as given
(`offsets.byte_pair_offsets`' rule), special-token literals as their tokens.

As in Python: the text is cut at the special-token literals the pipeline keeps (longest
first; a left-stripped one, RoBERTa's "<mask>", with the whitespace before it), the rest into
GPT-2's pieces (`byte_level.pre_tokenize`), and each piece is tokenized alone. A
token covers the characters whose UTF-8 bytes it holds, less its leading and trailing "Ġ".
"""

import re

import tensorflow as tf

from kbert.tokenizers.byte_level import WORD_START, pre_tokenize
from kbert.tokenizers.literals_graph import FENCE, part_starts, with_literals


def _split(text, tokenizer, specials):
    """`Encoder._pieces` on a batch: ragged [B, (parts)] strings and int32 [parts]: each
    part's special id, -1 for text."""
    if not specials:
        parts = tf.RaggedTensor.from_tensor(text[:, None])
        return parts, -tf.ones_like(parts.flat_values, tf.int32)
    stripped = set(getattr(tokenizer, "left_stripped", ()))
    strip = getattr(tokenizer, "left_strip_class", r"\s")
    patterns = {literal: (f"{strip}*" if literal in stripped else "") + re.escape(literal)
                for literal in specials}
    alternatives = "|".join(patterns[literal] for literal in
                            sorted(specials, key=len, reverse=True))
    fenced = tf.strings.regex_replace(text, f"({alternatives})",
                                      FENCE + rb"\1" + FENCE)
    parts = tf.strings.split(fenced, FENCE)
    special = -tf.ones_like(parts.flat_values, tf.int32)
    for literal, token_id in specials.items():
        special = tf.where(tf.strings.regex_full_match(parts.flat_values, patterns[literal]),
                           token_id, special)
    return parts, special


def _utf8_lengths(codes):
    return tf.where(codes < 0x80, 1, tf.where(codes < 0x800, 2, tf.where(codes < 0x10000, 3,
                                                                          4)))


def encode(text, tokenizer, specials):
    """Valid UTF-8 strings [B] -> a dict of ragged [B, (tokens)] tensors: `ids` (int32),
    `starts` / `ends` (int32 code points into the text), `literal` (bool: a special literal
    typed in the text, which is no entity), `words` (int32: the token's GPT-2 piece, numbered
    over the batch in order; -1 for a special literal) and `codes` (ragged [B, (chars)]
    int32: the texts' code points)."""
    if getattr(tokenizer, "lowercase", False):
        raise NotImplementedError("pipeline.export maps byte-level BPE tokens back to "
                                  "characters for a cased tokenizer (RoBERTa's), not a "
                                  "lowercase=True one.")
    parts, part_special = _split(text, tokenizer, specials)
    is_special = part_special >= 0
    part_start, _ = part_starts(parts)
    # GPT-2's pieces of each text part, each tokenized alone (as `tokenize_words`).
    pieces = pre_tokenize(tf.where(is_special, "", parts.flat_values))  # [P, (pieces)]
    piece_codes = tf.strings.unicode_decode(pieces.flat_values, "UTF-8")  # [N, (chars)]
    piece_part = tf.cast(pieces.value_rowids(), tf.int32)
    piece_chars = tf.cast(piece_codes.row_lengths(), tf.int32)
    before = tf.cumsum(piece_chars, exclusive=True)
    piece_start = before - tf.gather(tf.concat([before, [0]], 0),
                                     tf.cast(tf.gather(pieces.row_starts(), piece_part),
                                             tf.int32))
    piece_start += tf.gather(part_start, piece_part)  # its first character in its text
    ids = tf.cast(tokenizer.tokenize(pieces.flat_values), tf.int32)  # [N, (tokens)]
    flat_ids = ids.flat_values
    token_piece = tf.cast(ids.value_rowids(), tf.int32)
    # Each byte's character, flat over all pieces; the tokens tile their pieces' bytes.
    codes = piece_codes.flat_values
    char_piece = tf.cast(piece_codes.value_rowids(), tf.int32)
    char_in_piece = tf.range(tf.size(codes)) - tf.gather(
        tf.cast(piece_codes.row_starts(), tf.int32), char_piece)
    owner = tf.repeat(char_in_piece, _utf8_lengths(codes))
    owner = tf.concat([owner, [0]], 0)  # (no pieces: stays in range)
    vocabulary = tokenizer.vocabulary
    byte_lengths = tf.constant([len(b) for b in tokenizer.token_bytes], tf.int32)
    lengths = tf.gather(byte_lengths, flat_ids)
    first_byte = tf.cumsum(lengths, exclusive=True)
    base = tf.gather(piece_start, token_piece)
    starts = base + tf.gather(owner, first_byte)
    ends = base + tf.gather(owner, tf.maximum(first_byte + lengths - 1, 0)) + 1
    leading = tf.constant([len(t) - len(t.lstrip(WORD_START)) for t in vocabulary], tf.int32)
    trailing = tf.constant([len(t) - len(t.rstrip(WORD_START)) for t in vocabulary], tf.int32)
    lead, trail = tf.gather(leading, flat_ids), tf.gather(trailing, flat_ids)
    starts = tf.where(lead > 0, tf.minimum(starts + lead, ends), starts)
    ends = tf.where((trail > 0) & (ends >= trail), tf.maximum(ends - trail, starts), ends)
    # Per part: its pieces' tokens, or its literal.
    count = tf.size(flat_ids)
    part_tokens = tf.RaggedTensor.from_row_splits(
        tf.RaggedTensor.from_row_splits(tf.range(count), ids.row_splits, validate=False),
        pieces.row_splits, validate=False).merge_dims(1, 2)  # [P, (tokens)]
    return with_literals(text, parts, part_special, part_tokens, {
        "ids": flat_ids, "starts": starts, "ends": ends, "words": token_piece})
