"""Tokens -> text as transformers' fast tokenizers give it to its pipelines, in Python and in
the TensorFlow graph (the graph functions are the twins of the Python ones; the export tests
hold them equal on the reference inputs).

Three decoders, one per kind of tokenizer:

- WordPiece: "##" pieces joined, a space before the others, the tokenizers library's
  per-token cleanup (" ," -> ","); `decode` then applies transformers'
  `clean_up_tokenization` (BERT's tokenizers clean up by default);
- Metaspace (SentencePiece): "▁" -> " ", the first one dropped; no cleanup;
- ByteLevel (byte-level BPE): the tokens' bytes joined, a broken character as U+FFFD; no
  cleanup (RoBERTa's tokenizer does not clean up).
"""

import functools
import re

import tensorflow as tf

from kbert.tokenizers.byte_level import bytes_to_unicode

WORD_PIECE_PREFIX = "##"  # WordPiece's mark of a piece that continues a word
UNDERLINE = "\u2581"  # SentencePiece's word start ("▁")
# transformers' `clean_up_tokenization` (decode with clean_up_tokenization_spaces=True).
CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
            (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))
# The per-token cleanup of the tokenizers library's WordPiece decoder.
DECODER_CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
                    (" n't", "n't"), (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"),
                    (" 've", "'ve"), (" 're", "'re"))


def replace_all(text, pairs):
    for old, new in pairs:
        text = text.replace(old, new)
    return text


# === Python ===

def word_piece_string(tokens):
    """The WordPiece decoder of a list of tokens."""
    out = []
    for i, token in enumerate(tokens):
        if i:
            token = (token[len(WORD_PIECE_PREFIX):] if token.startswith(WORD_PIECE_PREFIX)
                     else " " + token)
        out.append(replace_all(token, DECODER_CLEAN_UP))
    return "".join(out)


def metaspace_string(tokens):
    """The Metaspace decoder of a list of pieces."""
    text = "".join(tokens).replace(UNDERLINE, " ")
    return text[1:] if tokens and tokens[0].startswith(UNDERLINE) else text


@functools.lru_cache(maxsize=None)
def _byte_of():
    return {symbol: bytes([byte]) for byte, symbol in enumerate(bytes_to_unicode())}


def byte_level_string(tokens):
    """The ByteLevel decoder of a list of tokens: a token of byte symbols only is their
    bytes, any other its UTF-8."""
    byte_of = _byte_of()
    return b"".join(b"".join(byte_of[c] for c in token)
                    if all(c in byte_of for c in token)
                    else token.encode("utf-8") for token in tokens).decode(
                        "utf-8", errors="replace")


# === Graph ===

def _graph_replace_all(strings, pairs):
    for old, new in pairs:
        strings = tf.strings.regex_replace(strings, re.escape(old), new.replace("\\", "\\\\"))
    return strings


def graph_pieces_string(tokens, metaspace):
    """`word_piece_string` (or with `metaspace`, `metaspace_string`) of each row of ragged
    strings [N, (tokens)] -> [N]."""
    first = tf.equal(tf.ragged.range(tokens.row_lengths()).flat_values, 0)
    flat = tokens.flat_values
    if metaspace:
        text = tf.strings.regex_replace(flat, UNDERLINE, " ")
        leading = first & tf.strings.regex_full_match(flat, f"(?s){UNDERLINE}.*")
        text = tf.where(leading, tf.strings.regex_replace(text, "^ ", "", replace_global=False),
                        text)
    else:
        continued = tf.strings.regex_full_match(flat, f"(?s){re.escape(WORD_PIECE_PREFIX)}.*")
        later = tf.where(continued, tf.strings.regex_replace(
            flat, "^" + re.escape(WORD_PIECE_PREFIX), "", replace_global=False),
                         tf.strings.join([" ", flat]))
        text = _graph_replace_all(tf.where(first, flat, later), DECODER_CLEAN_UP)
    return tf.strings.reduce_join(tokens.with_flat_values(text), axis=1)


def graph_pieces_decode(vocabulary, token_ids, metaspace):
    """The decode of each row of ragged ids [N, (tokens)] -> strings [N] (`vocabulary`: a
    string tensor, the tokens by id): `graph_pieces_string`, then WordPiece's cleanup."""
    text = graph_pieces_string(tf.gather(vocabulary, token_ids), metaspace)
    return text if metaspace else _graph_replace_all(text, CLEAN_UP)


def graph_bytes_decode(token_bytes, token_ids):
    """The decode of a byte-level BPE: each row of ragged ids [N, (tokens)] -> its tokens'
    bytes joined, a broken character as U+FFFD (`token_bytes`: a string tensor, the tokens'
    bytes by id)."""
    text = tf.strings.reduce_join(tf.gather(token_bytes, token_ids), axis=1)
    return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace")


def graph_byte_level_string(tokens):
    """`byte_level_string` of each row of ragged strings [N, (tokens)] -> [N]."""
    symbols = [ord(s) for s in bytes_to_unicode()]
    order = sorted(range(256), key=lambda b: symbols[b])
    sorted_codes = tf.constant([symbols[b] for b in order] + [0x7FFFFFFF], tf.int32)
    sorted_bytes = tf.constant([bytes([b]) for b in order] + [b""])
    codes = tf.strings.unicode_decode(tokens.flat_values, "UTF-8")  # [T, (chars)]
    flat = codes.flat_values
    at = tf.searchsorted(sorted_codes, flat, side="left")
    is_symbol = tf.equal(tf.gather(sorted_codes, at), flat)
    # reduce_all of a ragged tensor is an UnsortedSegmentProd, which check_saved_model does
    # not allow; the least of 0/1 per token (an empty token: the dtype's max, True) is the same.
    all_symbols = tf.reduce_min(codes.with_flat_values(tf.cast(is_symbol, tf.int32)),
                                axis=1) > 0  # [T]
    by_symbol = tf.gather(sorted_bytes, at)
    own = tf.strings.unicode_encode(flat[:, None], "UTF-8")
    chars = tf.where(tf.gather(all_symbols, tf.cast(codes.value_rowids(), tf.int32)),
                     by_symbol, own)
    token_text = tf.strings.reduce_join(codes.with_flat_values(chars), axis=1)
    text = tf.strings.reduce_join(tokens.with_flat_values(token_text), axis=1)
    return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace")
