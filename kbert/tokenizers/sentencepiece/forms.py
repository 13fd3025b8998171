"""The normalised forms of characters and chunks of a SentencePiece tokenizer in the graph,
as `kbert.tokenizers.offsets.Rule` makes them in Python: ALBERT's preprocessing (accents,
lower case), then the model's own charsmap (`SentencePieceTokenizer.charsmap`: nmt_nfkc's
forms of single characters, a table in the graph), then, for a chunk as a whole, NFKC's compositions
where the model has any; spaces as SentencePiece keeps them (a run is one, its last; none at
the end), for `kbert.tokenizers.sentencepiece.graph`."""

import tensorflow as tf
import tensorflow_text as tf_text

from kbert.tokenizers import normalization


def _mapped(strings, tokenizer):
    """Each string with every character replaced by the model's form of it alone."""
    chars_map = tokenizer.charsmap
    if not chars_map.forms:
        return strings
    codes, forms = chars_map.table()
    table_codes = tf.constant(codes)
    table_forms = tf.constant(forms)
    chars = tf.strings.unicode_decode(strings, "UTF-8")  # [..., (chars)]
    flat = chars.flat_values
    at = tf.minimum(tf.searchsorted(table_codes, flat), len(codes) - 1)
    hit = tf.equal(tf.gather(table_codes, at), flat)
    mapped = tf.where(hit, tf.gather(table_forms, at),
                      tf.strings.unicode_encode(flat[:, None], "UTF-8"))
    return tf.strings.reduce_join(chars.with_flat_values(mapped), axis=-1)


def char_forms(codes, tokenizer):
    """Each code point's normalised form alone (`offsets.Rule.char`): strings [C]. Accents
    are stripped only by ALBERT's preprocessing; DeBERTa-v3's tokenizer gives SentencePiece
    the text as it is, so "ï" is a piece of its own there."""
    chars = tf.strings.unicode_encode(codes[:, None], "UTF-8")
    forms = chars
    if tokenizer.albert_preprocess and not tokenizer.keep_accents:
        forms = normalization.strip_combining_marks(forms)
    if tokenizer.lowercase:
        forms = normalization.lower(forms)
    forms = tf.where(tf.equal(codes, 0), chars, forms)  # a NUL stays itself
    return _mapped(forms, tokenizer)


def collapse_spaces(forms, chunk):
    """`offsets.collapse_spaces` of every chunk: forms [C] in order, `chunk` [C] each one's
    chunk (non-decreasing). Returns the forms, a space followed by another or ending its
    chunk dropped."""
    space = tf.equal(forms, " ")
    following = tf.concat([chunk[1:], [-1]], 0)
    next_space = tf.concat([space[1:], [False]], 0)
    drop = space & (tf.not_equal(following, chunk) | next_space)
    return tf.where(drop, "", forms)


def leading_space(forms, chunk, chunks):
    """Whether each of `chunks` chunks' first non-empty form is a space: bool [chunks]."""
    index = tf.range(tf.size(forms))
    first = tf.math.unsorted_segment_min(
        tf.where(tf.strings.length(forms) > 0, index, tf.size(forms)), chunk, chunks)
    padded = tf.concat([forms, [""]], 0)
    return tf.equal(tf.gather(padded, tf.minimum(first, tf.size(forms))), " ")


def word_forms(words, tokenizer):
    """Each string's normalised form as a whole (`offsets.Rule.word`): strings [N]."""
    forms = words
    if tokenizer.albert_preprocess:
        forms = tf.strings.regex_replace(forms, "``|''", '"')
        if not tokenizer.keep_accents:
            forms = normalization.strip_combining_marks(forms)
    if tokenizer.lowercase:
        forms = normalization.lower(forms)
    forms = _mapped(forms, tokenizer)
    if tokenizer.charsmap.composes:
        forms = tf_text.normalize_utf8(forms, "NFKC")
    return tf.strings.regex_replace(forms, " +", " ")
