"""GPT-2's byte-level pre-tokenization in the graph (the first two steps of
`kbert.tokenizers.BytePairTokenizer`): the split of a text into pieces (`pre_tokenize`) and
the byte -> symbol table (`bytes_to_unicode`)."""

import tensorflow as tf

WORD_START = "\u0120"  # "Ġ": the byte symbol of a space, which starts a word

# The character classes of `tokenizers`' regex engine: `\s` is Unicode's White_Space property
# (not Python's `str.isspace`, which adds \x1c-\x1f); letters and numbers are RE2's \p{L} and
# \p{N} (Unicode 15 in TensorFlow 2.21; `tokenizers` 0.23 knows Unicode 16, whose new letters
# are split here as "other" characters).
SPACE = (r"[\x{9}-\x{d}\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}"
         r"\x{205f}\x{3000}]")
_NOT_SPACE_LETTER_NUMBER = SPACE[:1] + r"^\p{L}\p{N}" + SPACE[1:]
# GPT-2's pattern without its two whitespace alternatives (step 1 handles those).
WORD_PATTERN = ("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?" + _NOT_SPACE_LETTER_NUMBER
                + "+")
_FENCE = b"\xff"  # never in UTF-8


def bytes_to_unicode():
    """GPT-2's byte -> symbol table: printable Latin-1 bytes are themselves, the others
    (space, controls, ...) are shifted to U+0100 and up. A list of 256 characters."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    table, shifted = {}, 0
    for byte in range(256):
        if byte in printable:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(256 + shifted)
            shifted += 1
    return [table[byte] for byte in range(256)]


def pre_tokenize(text):
    """GPT-2's split of valid UTF-8 strings [N] -> ragged [N, (pieces)], in the graph."""
    # Whitespace runs apart from the text between them.
    fenced = tf.strings.regex_replace(text, f"({SPACE}+)", _FENCE + rb"\1" + _FENCE)
    runs = tf.strings.split(fenced, _FENCE)
    runs = tf.ragged.boolean_mask(runs, tf.strings.length(runs) > 0)  # [N, (runs)]
    values = runs.flat_values
    is_space = tf.strings.regex_full_match(values, f"{SPACE}+")
    # A run is followed by text when the next run of the same string is not whitespace.
    row_limits = tf.repeat(runs.row_limits(), runs.row_lengths())
    index = tf.range(tf.size(values, out_type=tf.int64))
    has_next = index + 1 < row_limits
    # (Shifts written so that a batch with no runs at all, all texts empty, stays empty.)
    next_is_text = has_next & tf.concat([~is_space, [False]], 0)[1:]
    cut = is_space & next_is_text
    length = tf.strings.length(values, unit="UTF8_CHAR")
    end = tf.maximum(length - 1, 0)
    head = tf.strings.substr(values, tf.zeros_like(end), end, unit="UTF8_CHAR")
    last = tf.strings.substr(values, end, tf.ones_like(end), unit="UTF8_CHAR")
    gives_space = cut & tf.equal(last, " ")  # the space goes to the next word
    prefix = tf.where(tf.concat([[False], gives_space], 0)[:-1], " ", "")
    first = tf.where(cut, head, tf.strings.join([prefix, values]))
    second = tf.where(cut & ~gives_space, last, "")
    pieces = tf.reshape(tf.stack([first, second], axis=1), [-1])
    pieces = runs.with_flat_values(tf.reshape(pieces, [-1, 2])).merge_dims(1, 2)
    pieces = tf.ragged.boolean_mask(pieces, tf.strings.length(pieces) > 0)
    # The text between runs (with its leading space) by the rest of GPT-2's pattern.
    fenced = tf.strings.regex_replace(pieces.flat_values, f"({WORD_PATTERN})", _FENCE + rb"\1")
    words = tf.strings.split(fenced, _FENCE)  # [pieces, (words)]
    words = pieces.with_flat_values(words).merge_dims(1, 2)
    return tf.ragged.boolean_mask(words, tf.strings.length(words) > 0)
