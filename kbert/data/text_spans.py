"""Words of the original text with their character spans, and the wordpieces of each word.

The tokenizers normalise text (clean, lower-case, NFD, strip accents) before they split it,
so offsets into the normalised string do not point into the original. Alignment is by word
instead: the original text is split into words by BERT's BasicTokenizer rule (whitespace
separates; each punctuation and CJK character is a word of its own; the characters BERT
deletes (NUL, U+FFFD, controls, format characters) join their neighbours and never start or
end a word), every word is tokenized alone, and each wordpiece keeps its word and, where
the pieces spell the normalised word, its own characters (else the whole word's).

Used by NER (labels per word, entities by character) and extractive QA (answers by
character), so that a prediction maps back to an exact substring of the original text.

A byte-level BPE (RoBERTa's `BytePairTokenizer`) is aligned as the pipelines' encoder does
it instead: the words are GPT-2's pieces (`byte_pair_words`), each tokenized with its leading
space (" word" -> "Ġword"; every pre-split CoNLL word gets one, as transformers'
`add_prefix_space=True`), and each token covers the characters its bytes came from
(`byte_pair_offsets`).
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


def tokenize_words(tokenizer, words, chunk_size=8192):
    """{word: int32 array of its wordpiece ids} for the distinct strings in `words`."""
    import tensorflow as tf  # the splitter above needs no TensorFlow

    distinct = list(dict.fromkeys(words))
    pieces = {}
    for i in range(0, len(distinct), chunk_size):
        chunk = distinct[i : i + chunk_size]
        ids = tokenizer.tokenize(tf.constant(utf8(chunk), tf.string))
        splits = ids.row_splits.numpy()
        values = ids.flat_values.numpy().astype(np.int32)
        for j, word in enumerate(chunk):
            pieces[word] = values[splits[j] : splits[j + 1]]
    return pieces


def byte_pair_offsets(word, tokens, token_bytes, start, lowercase=False):
    """int32 [tokens, 2]: the characters in the text of the byte-level BPE tokens of `word`
    (a GPT-2 piece starting at `start`), as the tokenizers library's ByteLevel offsets with
    `trim_offsets=True` (RoBERTa's): a token covers the characters whose UTF-8 bytes it holds
    (every token holding a byte of a multi-byte character covers that whole character),
    less its leading and trailing "Ġ" (space) symbols; a token of spaces only is an empty
    span at its end."""
    from kbert.tokenizers.byte_pair_tokenizer import WORD_START

    owner = [k for k, char in enumerate(word)
             for _ in (char.lower() if lowercase else char).encode("utf-8", "replace")]
    spans = []
    if sum(len(b) for b in token_bytes) != len(owner):  # (a lower-casing that changed bytes)
        return np.array([(start, start + len(word))] * len(tokens), np.int32).reshape(-1, 2)
    position = 0
    for token, data in zip(tokens, token_bytes):
        first = start + owner[position]
        last = start + owner[position + len(data) - 1] + 1
        position += len(data)
        leading = len(token) - len(token.lstrip(WORD_START))
        trailing = len(token) - len(token.rstrip(WORD_START))
        if leading:
            first = min(first + leading, last)
        if trailing and last >= trailing:
            last = max(last - trailing, first)
        spans.append((first, last))
    return np.array(spans, np.int32).reshape(-1, 2)


def byte_pair_words(texts):
    """[(piece, start)] of each text: GPT-2's split (the `BytePairTokenizer`'s own, in one
    TensorFlow call for all texts) with each piece's first character in the text."""
    import tensorflow as tf

    from kbert.tokenizers.byte_pair_tokenizer import pre_tokenize

    if not texts:
        return []
    text = tf.strings.unicode_transcode(tf.constant(utf8(texts), tf.string),
                                        "UTF-8", "UTF-8", errors="replace")
    result = []
    for row in pre_tokenize(text).to_list():
        words, position = [], 0
        for piece in row:
            word = piece.decode("utf-8")
            words.append((word, position))
            position += len(word)
        result.append(words)
    return result


# How uncased tokenizers strip accents: BERT (NFD, drop Mn), ALBERT (NFKD, drop combining).
_ACCENT_RULES = (("NFD", lambda c: unicodedata.category(c) == "Mn"),
                 ("NFKD", unicodedata.combining))


def _normalized_characters(word, lowercase, strip_accents, form, is_accent):
    """The normalised form of each character of `word` (the tokenizer's rule, per character)."""
    _, deleted = _patterns()
    out = []
    for char in word:
        if deleted.fullmatch(char):
            out.append("")
            continue
        if lowercase:
            char = char.lower()
        if strip_accents:
            char = "".join(c for c in unicodedata.normalize(form, char) if not is_accent(c))
        out.append(char)
    return out


def _piece_text(piece):
    for prefix in ("##", "\u2581"):  # WordPiece's continuation, SentencePiece's word start
        if piece.startswith(prefix) and len(piece) > len(prefix):
            return piece[len(prefix) :]
    return "" if piece == "\u2581" else piece


def piece_spans(word, piece_ids, vocabulary, lowercase, strip_accents=None):
    """[pieces, 2] character spans of the pieces inside `word` (relative to its start).

    Where the pieces (without "##" / "▁") spell the word as the tokenizer normalised it
    (lower-cased, and without accents when `strip_accents`, default: `lowercase`), each
    piece gets its own characters (a dropped accent or deleted character stays with the piece
    before it); otherwise ([UNK], compatibility characters) every piece gets the whole word.
    """
    strip_accents = lowercase if strip_accents is None else strip_accents
    count = len(piece_ids)
    whole = np.tile(np.array([[0, len(word)]], np.int32), (count, 1))
    if count < 2:
        return whole
    texts = [_piece_text(vocabulary[i]) for i in piece_ids]
    spelled = "".join(texts)
    for form, is_accent in _ACCENT_RULES:
        chars = _normalized_characters(word, lowercase, strip_accents, form, is_accent)
        if "".join(chars) == spelled:
            break
    else:
        return whole
    owner = [i for i, normalized in enumerate(chars) for _ in normalized]
    starts, position = [], 0
    for text in texts:
        starts.append(owner[position] if position < len(owner) else len(word))
        position += len(text)
    starts[0] = 0
    spans = np.empty((count, 2), np.int32)
    spans[:, 0] = starts
    spans[:-1, 1] = starts[1:]
    spans[-1, 1] = len(word)
    # An empty piece (SentencePiece's "▁" alone) takes the characters of the piece after it
    # (of the one before it at the end): no piece has an empty span.
    for k in range(count - 2, -1, -1):
        if not texts[k]:
            spans[k] = spans[k + 1]
    if not texts[-1]:
        spans[-1] = spans[-2]
    return spans


Alignment = collections.namedtuple("Alignment", ["text", "words", "piece_ids", "piece_words",
                                                 "piece_spans"])
Alignment.__doc__ = """A text, its words and its wordpieces, aligned.

Fields:
    text: the original text.
    words: list of `Word` (character spans in `text`).
    piece_ids: int32 [pieces], the wordpieces of all words in order (no [CLS]/[SEP]).
    piece_words: int32 [pieces], the index in `words` of each piece's word. A word the
        tokenizer turns into no pieces (only deleted characters, a lone accent) has none.
    piece_spans: int32 [pieces, 2], each piece's (start, end) characters in `text`.
"""


def _align(text, words, pieces, spans_of):
    if not words:
        empty = np.zeros([0], np.int32)
        return Alignment(text, words, empty, empty, np.zeros([0, 2], np.int32))
    ids = [pieces[w.text] for w in words]
    lengths = np.array([len(p) for p in ids], np.int64)
    piece_words = np.repeat(np.arange(len(words), dtype=np.int32), lengths)
    starts = np.repeat(np.array([w.start for w in words], np.int32), lengths)
    spans = np.concatenate([spans_of(w.text) for w in words]) + starts[:, None]
    return Alignment(text, words, np.concatenate(ids).astype(np.int32), piece_words,
                     spans.astype(np.int32))


def _is_byte_pair(tokenizer):
    from kbert.tokenizers import BytePairTokenizer

    return isinstance(tokenizer, BytePairTokenizer)


def _byte_pair_aligner(tokenizer, word_texts):
    """`_aligner` for a byte-level BPE (RoBERTa): `word_texts` are GPT-2 pieces with their
    leading space (" word" -> "Ġword"); spans by `byte_pair_offsets` (the pipeline's)."""
    pieces = tokenize_words(tokenizer, word_texts)
    vocabulary = tokenizer.vocabulary
    token_bytes = type(tokenizer)._token_bytes(vocabulary)
    lowercase = bool(getattr(tokenizer, "lowercase", False))

    @functools.lru_cache(maxsize=None)
    def spans_of(piece):
        ids = pieces[piece]
        return byte_pair_offsets(piece, [vocabulary[i] for i in ids],
                                 [token_bytes[i] for i in ids], 0, lowercase)

    return pieces, spans_of


def _byte_pair_align(text, split, pieces, spans_of):
    """One text's `Alignment` from its GPT-2 pieces [(piece, start)]: a word is a piece less
    its leading whitespace (transformers' word_ids of RoBERTa); the tokens of a piece of
    whitespace only (a "Ġ" of a run of spaces) join the word before (the first word when
    none is before; none when the text has no word)."""
    words, owners = [], []
    for piece, start in split:
        stripped = piece.lstrip()
        if stripped:
            begin = start + len(piece) - len(stripped)
            words.append(Word(stripped, begin, start + len(piece)))
        owners.append(len(words) - 1)
    if not words:
        empty = np.zeros([0], np.int32)
        return Alignment(text, words, empty, empty, np.zeros([0, 2], np.int32))
    ids, piece_words, spans = [], [], []
    for (piece, start), owner in zip(split, owners):
        ids.append(pieces[piece])
        piece_words.append(np.full([len(pieces[piece])], max(owner, 0), np.int32))
        spans.append(spans_of(piece) + start)
    return Alignment(text, words, np.concatenate(ids).astype(np.int32),
                     np.concatenate(piece_words), np.concatenate(spans).astype(np.int32))


def _aligner(tokenizer, word_texts):
    pieces = tokenize_words(tokenizer, word_texts)
    lowercase = bool(getattr(tokenizer, "lowercase", False))
    # ALBERT's SentencePiece tokenizer strips accents of cased text too (keep_accents=False).
    strip_accents = lowercase or not getattr(tokenizer, "keep_accents", True)
    vocabulary = tokenizer.vocabulary

    @functools.lru_cache(maxsize=None)
    def spans_of(word):
        return piece_spans(word, pieces[word], vocabulary, lowercase, strip_accents)

    return pieces, spans_of


def align_texts(texts, tokenizer):
    """Original texts -> one `Alignment` each (words by `split_words`; for a byte-level
    BPE (RoBERTa), GPT-2's pieces less their leading space, each tokenized with it as the
    pipelines' encoder does, so " word" -> "Ġword").

    All distinct words of all texts are tokenized together, in a few tokenizer calls.
    """
    if _is_byte_pair(tokenizer):
        splits = byte_pair_words(list(texts))
        pieces, spans_of = _byte_pair_aligner(tokenizer, [p for s in splits for p, _ in s])
        return [_byte_pair_align(text, split, pieces, spans_of)
                for text, split in zip(texts, splits)]
    words = [split_words(text) for text in texts]
    pieces, spans_of = _aligner(tokenizer, [w.text for ws in words for w in ws])
    return [_align(text, ws, pieces, spans_of) for text, ws in zip(texts, words)]


def align_words(word_lists, tokenizer):
    """Pre-split words (CoNLL sentences) -> one `Alignment` each, over the words joined by
    single spaces. Each given word is tokenized whole: a word with punctuation inside
    ("U.S.") keeps all its pieces under its one index."""
    joined = [join_words(list(ws)) for ws in word_lists]
    if _is_byte_pair(tokenizer):  # transformers' add_prefix_space=True: " word" each
        pieces, spans_of = _byte_pair_aligner(tokenizer, [" " + w for ws in word_lists
                                                          for w in ws])
        return [_byte_pair_align(text, [(" " + w.text, w.start - 1) for w in ws], pieces,
                                 spans_of) for text, ws in joined]
    pieces, spans_of = _aligner(tokenizer, [w for ws in word_lists for w in ws])
    return [_align(text, ws, pieces, spans_of) for text, ws in joined]
