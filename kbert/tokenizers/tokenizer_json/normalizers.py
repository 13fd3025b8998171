"""The normalisers of a tokenizer.json that kbert reads, in Python and in the graph, each with
the original character every normalised character comes from (`origin`), as the `tokenizers`
package aligns them:

- "nfc": Unicode NFC. The text is cut into blocks (a character with the ones that compose or
  reorder with it: combining marks, Hangul vowels and trailing consonants, and any character
  that NFC joins to the one before it), each block normalised alone. Of a block that NFC
  shortens, the first normalised character comes from the block's first character (the one
  the others composed into) and the rest from its last ones, in order; a block that NFC
  lengthens gives its extra characters the origin of its last.
- "metaspace": every space becomes "▁" (one for one); with `prepend`, a "▁" goes before
  non-empty text and comes from its first character.
"""

import bisect
import functools
import unicodedata

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

MARK = "\u2581"  # "▁"
_JAMO_FOLLOWERS = ((0x1161, 0x1175), (0x11A8, 0x11C2))  # Hangul vowels, trailing consonants


@functools.lru_cache(maxsize=None)
def _combining_runs():
    """(first code point, combining) of each run of combining class zero / non-zero, with the
    Hangul vowels and trailing consonants counted as non-zero: int32 arrays."""
    flags = np.fromiter(map(unicodedata.combining, map(chr, range(0x110000))), np.int32,
                        0x110000) != 0
    for first, last in _JAMO_FOLLOWERS:
        flags[first:last + 1] = True
    firsts = np.flatnonzero(np.concatenate([[True], flags[1:] != flags[:-1]]))
    return firsts.astype(np.int32), flags[firsts].astype(np.int32)


def _follows(code):
    firsts, flags = _combining_runs()
    return bool(flags[bisect.bisect_right(firsts, code) - 1])


def _joins(previous, char):
    return _follows(ord(char)) or unicodedata.normalize("NFC", previous + char) != (
        unicodedata.normalize("NFC", previous) + unicodedata.normalize("NFC", char))


def _block_origin(start, size, normalized_size):
    if normalized_size <= size:
        return [start] + [start + size - normalized_size + j for j in range(1, normalized_size)]
    return [start + min(j, size - 1) for j in range(normalized_size)]


def normalize(text, normalizer, prepend=False):
    """(normalised text, origin: the index in `text` of each normalised character)."""
    if normalizer is None:
        return text, list(range(len(text)))
    if normalizer == "metaspace":
        out = text.replace(" ", MARK)
        if prepend and text:
            return MARK + out, [0] + list(range(len(text)))
        return out, list(range(len(text)))
    if unicodedata.is_normalized("NFC", text):
        return text, list(range(len(text)))
    starts = [i for i in range(len(text)) if i == 0 or not _joins(text[i - 1], text[i])]
    pieces, origin = [], []
    for start, end in zip(starts, starts[1:] + [len(text)]):
        piece = unicodedata.normalize("NFC", text[start:end])
        pieces.append(piece)
        origin += _block_origin(start, end - start, len(piece))
    return "".join(pieces), origin


def graph_normalize(parts, normalizer, prepend=False):
    """`normalize` of valid UTF-8 strings [P] in the graph: (normalised strings [P], origin
    ragged [P, (normalised characters)] int32)."""
    codes = tf.strings.unicode_decode(parts, "UTF-8")
    lengths = tf.cast(codes.row_lengths(), tf.int32)
    if normalizer is None:
        return parts, tf.ragged.range(lengths)
    if normalizer == "metaspace":
        out = tf.strings.regex_replace(parts, " ", MARK)
        if not prepend:
            return out, tf.ragged.range(lengths)
        added = tf.cast(lengths > 0, tf.int32)
        out = tf.where(lengths > 0, tf.strings.join([MARK, out]), out)
        origin = tf.ragged.range(lengths + added)
        return out, origin.with_flat_values(tf.maximum(
            origin.flat_values - tf.gather(added, origin.value_rowids()), 0))
    flat = codes.flat_values
    count = tf.size(flat)
    index = tf.range(count)
    rows = tf.cast(codes.value_rowids(), tf.int32)
    row_starts = tf.cast(codes.row_starts(), tf.int32)
    first = tf.equal(index, tf.gather(row_starts, rows))
    firsts, flags = _combining_runs()
    follows = tf.gather(tf.constant(flags), tf.searchsorted(tf.constant(firsts), flat,
                                                            side="right") - 1) > 0
    chars = tf.strings.unicode_encode(flat[:, None], "UTF-8")
    previous = tf.concat([[""], chars], 0)[:-1]

    def nfc(strings):
        return tf_text.normalize_utf8(strings, "NFC")

    composes = tf.not_equal(nfc(tf.strings.join([previous, chars])),
                            tf.strings.join([nfc(previous), nfc(chars)]))
    starts = first | ~(follows | composes)
    block = tf.cumsum(tf.cast(starts, tf.int32)) - 1  # [chars]
    blocks = tf.reduce_sum(tf.cast(starts, tf.int32))
    block_text = tf.strings.unicode_encode(
        tf.RaggedTensor.from_value_rowids(flat, block, nrows=blocks), "UTF-8")
    normalized = nfc(block_text)
    size = tf.math.bincount(block, minlength=blocks, maxlength=blocks)
    new_size = tf.strings.length(normalized, unit="UTF8_CHAR")
    block_first = tf.boolean_mask(index, starts)
    block_start = block_first - tf.gather(row_starts, tf.gather(rows, block_first))
    block_row = tf.gather(rows, block_first)
    j = tf.ragged.range(new_size)  # [blocks, (normalised characters)]
    start, size_, new = (tf.gather(x, j.value_rowids()) for x in (block_start, size, new_size))
    j = j.flat_values
    origin = tf.where(new <= size_, tf.where(j == 0, start, start + size_ - new + j),
                      start + tf.minimum(j, size_ - 1))
    out = tf.strings.reduce_join(tf.RaggedTensor.from_value_rowids(
        normalized, block_row, nrows=tf.size(parts, out_type=tf.int32)), axis=1)
    per_row = tf.math.unsorted_segment_sum(new_size, block_row, tf.size(parts))
    return out, tf.RaggedTensor.from_row_lengths(origin, per_row)
