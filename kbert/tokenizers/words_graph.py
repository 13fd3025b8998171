"""In the graph: words of the original text with their character spans, each word's
wordpieces, and the characters of each piece (the graph twin of `kbert.tokenizers.words`,
`kbert.tokenizers.word_pieces` and `kbert.tokenizers.alignment.align_texts`); and the pieces' ends
as transformers' offsets have them (`trimmed_ends`).

Offsets are in Unicode code points (Python `str` indices) of the text as given: the text is
decoded to code points, each code point is classified by a table built from
`words.split_words`' own rule (space, deleted, a word of its own, or a word character), and
words are cut by vectorised run logic. (tensorflow-text's `regex_split_with_offsets` cannot do it:
RE2 has no look-around to keep the deleted characters off a word's ends, and the op drops
everything after a NUL.) Every word is then tokenized alone, as `alignment.align_texts`
does, so the first piece of each word is where its prediction is read.
"""

import functools

import numpy as np
import tensorflow as tf

from kbert.tokenizers import normalization, words as tokenizer_words
from kbert.tokenizers.word_pieces import _piece_text

WORD, SPACE, DELETED, SINGLE = 0, 1, 2, 3
_KINDS = {"": WORD, "space": SPACE, "deleted": DELETED, "single": SINGLE}


@functools.lru_cache(maxsize=None)
def kind_runs():
    """(first code point, kind) of each run of one kind over the code space, as two int32
    arrays, by `words`' classification (the same Unicode tables as `split_words`)."""
    firsts, kinds = [], []

    def add(code, kind):
        if not kinds or kinds[-1] != kind:
            firsts.append(code)
            kinds.append(kind)

    blocks = [(a, b, True) for a, b in tokenizer_words._SCANNED]
    blocks += [(a, b, False) for a, b in tokenizer_words._UNSCANNED_DELETED]
    for first, last, scanned in sorted(blocks):
        if not scanned:
            add(first, DELETED)
            continue
        for code in range(first, last + 1):
            add(code, _KINDS[tokenizer_words._kind(code)])
    return np.array(firsts, np.int32), np.array(kinds, np.int32)


def valid_utf8(text):
    """Invalid UTF-8 replaced by U+FFFD (as the tokenizers do): the text offsets refer to."""
    return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace")


def substrings(text, rows, starts, ends):
    """`text[rows][starts:ends]` in code points (flat int32 vectors) -> strings."""
    return tf.strings.substr(tf.gather(text, rows), starts, ends - starts, unit="UTF8_CHAR")


def split_words(text):
    """`words.split_words` on a batch: valid UTF-8 strings [B] ->

    a dict of flat vectors over all words of the batch, in order: `row` (the text), `start`,
    `end` (code points), `text`, and `first_char` / `last_char` (indices into `codes` and
    `kinds`, the batch's code points and their kinds, flat), and `row_splits` [B + 1].
    """
    codes = tf.strings.unicode_decode(text, "UTF-8")  # [B, (chars)]
    flat = codes.flat_values
    count = tf.size(flat)
    index = tf.range(count)
    rows = tf.cast(codes.value_rowids(), tf.int32)
    row_starts = tf.cast(codes.row_starts(), tf.int32)
    firsts, kinds = kind_runs()
    kind = tf.gather(tf.constant(kinds), tf.searchsorted(tf.constant(firsts), flat,
                                                         side="right") - 1)
    boundary = (kind == SPACE) | (kind == SINGLE)
    # A run: a boundary character alone, or the characters between two boundaries.
    new_run = (index == tf.gather(row_starts, rows)) | boundary | tf.concat(
        [[True], boundary[:-1]], 0)
    run = tf.cumsum(tf.cast(new_run, tf.int32)) - 1
    num_runs = tf.reduce_sum(tf.cast(new_run, tf.int32))
    # A word: a punctuation / CJK character, or a run from its first to its last word
    # character (the deleted characters at its ends left out); a run of spaces is none.
    inside = (kind == WORD) | (kind == SINGLE)
    first = tf.math.unsorted_segment_min(tf.where(inside, index, count), run, num_runs)
    last = tf.math.unsorted_segment_max(tf.where(inside, index, -1), run, num_runs)
    found = first < count
    first, last = tf.boolean_mask(first, found), tf.boolean_mask(last, found)
    word_rows = tf.gather(rows, first)
    base = tf.gather(row_starts, word_rows)
    starts, ends = first - base, last + 1 - base
    row_splits = tf.concat([[0], tf.cumsum(tf.math.bincount(
        word_rows, minlength=tf.size(text), maxlength=tf.size(text)))], 0)
    return {"row": word_rows, "start": starts, "end": ends,
            "text": substrings(text, word_rows, starts, ends), "first_char": first,
            "last_char": last, "codes": flat, "kinds": kind,
            "row_splits": tf.cast(row_splits, tf.int64)}


def _piece_tables(tokenizer):
    texts = [_piece_text(piece) for piece in tokenizer.vocabulary]
    return tf.constant(texts), tf.constant([len(t) for t in texts], tf.int32)


def piece_spans(words, pieces, tokenizer):
    """`word_pieces.piece_spans` of every word: the (start, end) code points of each piece in
    its text (flat int32 vectors over `pieces.flat_values`).

    Where the pieces (without "##" / "▁") spell the word normalised character by character
    (BERT's NFD accent rule tried first, ALBERT's NFKD one second), a piece starts at the
    character that holds its first normalised character; else every piece spans its word.
    """
    lowercase, strip = tokenizer.word_normalization
    char_index = tf.ragged.range(words["first_char"], words["last_char"] + 1)  # [W, (chars)]
    codes = tf.gather(words["codes"], char_index.flat_values)
    chars = tf.strings.unicode_encode(codes[:, None], "UTF-8")
    deleted = tf.equal(tf.gather(words["kinds"], char_index.flat_values), DELETED)
    chars = tf.where(deleted, "", chars)
    if lowercase:
        chars = normalization.lower(chars, nul_free=True)
    rules = [chars]
    if strip:
        rules = [normalization.strip_accents(chars), normalization.strip_combining_marks(chars)]
    texts_table, lengths_table = _piece_tables(tokenizer)
    piece_texts = tf.gather(texts_table, pieces.flat_values)
    spelled = tf.strings.reduce_join(pieces.with_flat_values(piece_texts), axis=1)  # [W]
    matches = [tf.equal(tf.strings.reduce_join(char_index.with_flat_values(rule), axis=1),
                        spelled) for rule in rules]
    matched = tf.reduce_any(tf.stack(matches), axis=0)  # [W]
    char_words = tf.cast(char_index.value_rowids(), tf.int32)
    lengths = [tf.strings.length(rule, unit="UTF8_CHAR") for rule in rules]
    if strip:  # the first rule that spells the pieces
        lengths = [tf.where(tf.gather(matches[0], char_words), *lengths)]
    lengths = lengths[0]  # [chars]: code points of each normalised character
    # Each piece's first normalised character, found in the running totals over all words.
    total = tf.cumsum(lengths)
    char_row_starts = tf.cast(char_index.row_starts(), tf.int32)
    word_base = tf.gather(total - lengths, char_row_starts)  # [W]
    word_total = tf.math.unsorted_segment_sum(lengths, char_words, tf.size(word_base))
    piece_lengths = tf.gather(lengths_table, pieces.flat_values)
    before_piece = tf.cumsum(piece_lengths, exclusive=True)
    piece_words = tf.cast(pieces.value_rowids(), tf.int32)
    first_piece = tf.gather(tf.cast(pieces.row_starts(), tf.int32), piece_words)
    position = before_piece - tf.gather(before_piece, first_piece)
    owner = tf.searchsorted(total, tf.gather(word_base, piece_words) + position,
                            side="right") - tf.gather(char_row_starts, piece_words)
    word_length = tf.gather(words["end"] - words["start"], piece_words)
    starts = tf.where(position < tf.gather(word_total, piece_words), owner, word_length)
    index = tf.range(tf.size(piece_words))
    is_first = tf.equal(index, first_piece)
    is_last = tf.equal(index, tf.gather(tf.cast(pieces.row_limits(), tf.int32) - 1,
                                        piece_words))
    starts = tf.where(is_first, 0, starts)
    following = tf.minimum(index + 1, tf.maximum(tf.size(index) - 1, 0))
    ends = tf.where(is_last, word_length, tf.gather(starts, following))
    # An empty piece (SentencePiece's "▁" alone) takes the span of the next non-empty piece
    # of its word, or of the word's last; the last, when empty, that of the one before it.
    targets = tf.boolean_mask(index, (piece_lengths > 0) | is_last)
    target = tf.gather(targets, tf.searchsorted(targets, index, side="left"))
    starts, ends = tf.gather(starts, target), tf.gather(ends, target)
    before = tf.maximum(index - 1, 0)
    last_empty = is_last & ~is_first & tf.equal(piece_lengths, 0)
    starts = tf.where(last_empty, tf.gather(starts, before), starts)
    ends = tf.where(last_empty, tf.gather(ends, before), ends)
    whole = ~tf.gather(matched, piece_words) | tf.gather(
        tf.cast(pieces.row_lengths(), tf.int32) < 2, piece_words)
    starts = tf.where(whole, 0, starts)
    ends = tf.where(whole, word_length, ends)
    offset = tf.gather(words["start"], piece_words)
    return starts + offset, ends + offset


def align(text, tokenizer, spans=True):
    """`alignment.align_texts` in the graph: valid UTF-8 strings [B] ->

    `words` (the dict of `split_words`), `pieces` (ragged [W, (pieces)] int32 ids of each
    word) and, with `spans`, `piece_starts` / `piece_ends` (flat over the pieces).
    """
    words = split_words(text)
    pieces = tokenizer.tokenize(words["text"])  # [W, (pieces)]
    out = {"words": words, "pieces": pieces}
    if spans:
        out["piece_starts"], out["piece_ends"] = piece_spans(words, pieces, tokenizer)
    return out


def trimmed_ends(aligned, tokenizer):
    """Each piece's end with the characters that normalise to nothing at its end left out
    (a control or zero-width character, a stripped accent), as transformers' offsets have
    them: `align` gives a piece the characters up to the next one."""
    words, pieces = aligned["words"], aligned["pieces"]
    chars = tf.strings.unicode_encode(words["codes"][:, None], "UTF-8")
    lowercase, strip = tokenizer.word_normalization
    if lowercase:
        chars = normalization.lower(chars, nul_free=True)
    if strip:
        chars = normalization.strip_accents(chars)
    vanish = tf.equal(words["kinds"], DELETED) | tf.equal(tf.strings.length(chars), 0)
    kept = tf.boolean_mask(tf.range(tf.size(vanish)), ~vanish)  # sorted flat indices
    word = tf.cast(pieces.value_rowids(), tf.int32)
    base = tf.gather(words["first_char"] - words["start"], word)  # the text's first char
    starts, ends = aligned["piece_starts"], aligned["piece_ends"]
    last = tf.searchsorted(kept, base + ends - 1, side="right") - 1
    trimmed = tf.gather(tf.concat([kept, [-1]], 0),
                        tf.where(last < 0, tf.size(kept), last)) - base + 1
    return tf.where(trimmed > starts, tf.minimum(trimmed, ends), ends)
