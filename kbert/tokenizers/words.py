"""The words a tokenizer tokenizes one by one, with their characters in the original text.

- BERT's BasicTokenizer rule (`split_words`, WordPiece and SentencePiece alignment in
  `kbert.tokenizers.alignment`): whitespace separates; each punctuation and CJK character is a
  word of its own; the characters BERT deletes (NUL, U+FFFD, controls, format characters)
  join their neighbours and never start or end a word.
- GPT-2's pieces (`byte_pair_words`, a byte-level BPE's own split, " word" with its space).

`tokenize_words` tokenizes every distinct word once, in a few tokenizer calls.
"""

import collections
import functools
import re
import unicodedata

import numpy as np

Word = collections.namedtuple("Word", ["text", "start", "end"])
Word.__doc__ = "A word of the original text: `text == original[start:end]`."

# BERT's `_is_chinese_char`: the CJK Unified Ideographs blocks (not kana or hangul).
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_ASCII_PUNCTUATION = ((33, 47), (58, 64), (91, 96), (123, 126))  # BERT counts $ + < = > ^ ` | ~


def _kind(code):
    """"space", "deleted", "single" (punctuation, CJK: a word of its own) or "" (word)."""
    char = chr(code)
    category = unicodedata.category(char)
    if category == "Zs" or char in " \t\n\r":
        return "space"
    if category[0] == "C" or code in (0, 0xFFFD):
        return "deleted"
    if category[0] == "P":
        return "single"
    if code < 127 and any(a <= code <= b for a, b in _ASCII_PUNCTUATION):
        return "single"
    if category == "Lo" and any(a <= code <= b for a, b in _CJK_RANGES):
        return "single"
    return ""


# Planes 4-13 are unassigned (Cn) and planes 15-16 private use (Co): deleted without a scan
# (two thirds of the code space).
_SCANNED = ((0, 0x3FFFF), (0xE0000, 0xEFFFF))
_UNSCANNED_DELETED = ((0x40000, 0xDFFFF), (0xF0000, 0x10FFFF))


@functools.lru_cache(maxsize=None)
def _classes():
    """{kind: a regex character class of its code points}, from this Python's unicodedata."""
    ranges = {"space": [], "deleted": list(_UNSCANNED_DELETED), "single": []}
    for first, last in _SCANNED:
        previous = None
        for code in range(first, last + 1):
            kind = _kind(code)
            if kind:
                runs = ranges[kind]
                if previous == kind:
                    runs[-1] = (runs[-1][0], code)
                else:
                    runs.append((code, code))
            previous = kind
    return {kind: "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}"
                          for a, b in runs) for kind, runs in ranges.items()}


@functools.lru_cache(maxsize=None)
def _patterns():
    c = _classes()
    boundary = c["space"] + c["single"]
    word = re.compile(f"[{c['single']}]|[^{boundary}{c['deleted']}](?:[^{boundary}]*"
                      f"[^{boundary}{c['deleted']}])?")
    return word, re.compile(f"[{c['deleted']}]")


def split_words(text):
    """The words of `text` (list of `Word`), by BERT's BasicTokenizer rule (see the module)."""
    word, _ = _patterns()
    return [Word(m.group(), m.start(), m.end()) for m in word.finditer(text)]


def join_words(words):
    """Pre-split words (a CoNLL sentence) -> (text, [Word]): joined by single spaces."""
    spans, start = [], 0
    for text in words:
        spans.append(Word(text, start, start + len(text)))
        start += len(text) + 1
    return " ".join(words), spans


def utf8(texts):
    """Python strings -> UTF-8 bytes for TensorFlow. A lone surrogate (JSON allows "\\ud800")
    becomes invalid UTF-8, which the tokenizers replace with U+FFFD and then delete."""
    return [text.encode("utf-8", "surrogatepass") for text in texts]


def tokenize_words(tokenizer, words, chunk_size=8192, texts=False):
    """{word: int32 array of its wordpiece ids} for the distinct strings in `words`: pieces of
    texts (`Tokenizer.tokenize_pieces`), or whole texts when `texts` is true."""
    import tensorflow as tf

    tokenize = tokenizer.tokenize if texts else tokenizer.tokenize_pieces
    distinct = list(dict.fromkeys(words))
    pieces = {}
    for i in range(0, len(distinct), chunk_size):
        chunk = distinct[i : i + chunk_size]
        ids = tokenize(tf.constant(utf8(chunk), tf.string))
        splits = ids.row_splits.numpy()
        values = ids.flat_values.numpy().astype(np.int32)
        for j, word in enumerate(chunk):
            pieces[word] = values[splits[j] : splits[j + 1]]
    return pieces


def offset_words(tokenizer, segments, split=None):
    """Per (text, start, end), the tokenizer's words of text[start:end] (`split`, by default
    its `offset_words`) as [(word, start)] in the text. A byte-level BPE with
    `add_prefix_space` (kbert's RoBERTa runs) puts a space before a segment that has none, as
    the tokenizers library's ByteLevel(add_prefix_space=True) and the tokenizer's own graph
    do: its first word then starts at start - 1, on a character that is not in the text."""
    pieces = [text[start:end] for text, start, end in segments]
    added = [int(tokenizer.add_prefix_space and bool(piece) and not piece.startswith(" "))
             for piece in pieces]
    split = (split or tokenizer.offset_words)([" " * a + p for a, p in zip(added, pieces)])
    return [[(w, s + start - a) for w, s in words]
            for (_, start, _), a, words in zip(segments, added, split)]


def as_read(text):
    """(the characters TensorFlow's tokenizers read for `text`, for each of them the index of
    its character in `text`, or None where they are `text`'s own): `utf8` gives a lone
    surrogate as its three bytes, which a UTF-8 repair (`unicode_transcode(errors="replace")`,
    as Python's decoder) reads as three U+FFFD; every other character is itself."""
    if not _SURROGATE.search(text):
        return text, None
    read = [char.encode("utf-8", "surrogatepass").decode("utf-8", "replace") for char in text]
    return "".join(read), [i for i, chars in enumerate(read) for _ in chars]


_SURROGATE = re.compile("[\ud800-\udfff]")


def read_bytes(char):
    """The UTF-8 bytes TensorFlow's tokenizers read for the character `char` (`as_read`):
    its own, or a lone surrogate's nine (three U+FFFD)."""
    try:
        return char.encode("utf-8")
    except UnicodeEncodeError:
        return as_read(char)[0].encode("utf-8")


def byte_pair_words(texts):
    """[(piece, start)] of each text: GPT-2's split (the `BytePairTokenizer`'s own, in one
    TensorFlow call for all texts) with each piece's first character in the text (a lone
    surrogate, which the split reads as three U+FFFD, is one character of its piece)."""
    import tensorflow as tf

    from kbert.tokenizers.byte_level import pre_tokenize

    if not texts:
        return []
    read = [as_read(text) for text in texts]  # valid UTF-8 once encoded
    text = tf.constant([seen.encode("utf-8") for seen, _ in read], tf.string)
    result = []
    for original, (_, origin), row in zip(texts, read, pre_tokenize(text).to_list()):
        words, position = [], 0
        for piece in row:
            word = piece.decode("utf-8")
            if origin is None:
                words.append((word, position))
            else:  # back to the text's characters
                first, last = origin[position], origin[position + len(word) - 1] + 1
                words.append((original[first:last], first))
            position += len(word)
        result.append(words)
    return result
