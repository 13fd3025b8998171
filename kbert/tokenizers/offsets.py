"""Character offsets of the tokens of one word in the ORIGINAL text, by the rule of
transformers' fast tokenizers (`return_offsets_mapping=True`), for kbert's tokenizers:
`word_offsets` for WordPiece and SentencePiece, `byte_pair_offsets` for a byte-level BPE.

A token covers the original characters its normalised characters came from, and no more:
an accent stripped off the end of a word, or a deleted control character between two
pieces, belongs to no token. (`kbert.tokenizers.word_pieces.piece_spans` answers another question:
it tiles each word with its pieces, as NER training and SQuAD answers need.) Pipeline
outputs (`start`, `end`, answers) must be transformers' to the character, so this module
keeps transformers' rule.

The normalised form of a word is rebuilt in Python by the tokenizer's own rule
(`kbert.tokenizers`: BERT's cleaning, lower-casing and accent stripping; ALBERT's NFKD and
lower-casing; a SentencePiece model's own charsmap, `SentencePieceTokenizer.charsmap`), character
by character where that is exact, and by prefixes of the word where one character's form
depends on its neighbours (NFC, nmt_nfkc composing "e\u0301" into "é", "``" -> '"'). As
the tokenizers library aligns a normalisation, a character composed of several belongs to
the first of them (the others to no token), and a character that becomes several gives
each of them to every token they start. A SentencePiece model that makes a character a
space (nmt_nfkc: the zero-width space, U+200B) starts a word there: "▁" spells that space,
which belongs to that character, and a run of such spaces is one, its last.
"""

import bisect
import functools
import re
import unicodedata

import numpy as np

from kbert.tokenizers.byte_level import WORD_START
from kbert.tokenizers.decoding import UNDERLINE as SENTENCE_PIECE_MARK
from kbert.tokenizers.decoding import WORD_PIECE_PREFIX
from kbert.tokenizers.normalization import (
    character_ranges,
    python_strip_accents,
    python_strip_combining_marks,
)
from kbert.tokenizers.words import read_bytes

# Longer words are mapped by prefixes only up to here (the cost grows with the square).
PREFIX_LIMIT = 64


@functools.lru_cache(maxsize=None)
def _deleted_bounds():
    ranges = character_ranges("deleted")
    return [a for a, _ in ranges], [b for _, b in ranges]


def is_deleted(char):
    """A character BERT's cleaning deletes (NUL, U+FFFD, controls, format characters)."""
    firsts, lasts = _deleted_bounds()
    i = bisect.bisect_right(firsts, ord(char)) - 1
    return i >= 0 and ord(char) <= lasts[i]


class Rule:
    """How `tokenizer` normalises text, in Python, and how its pieces spell text."""

    def __init__(self, tokenizer):
        self.sentence_piece = tokenizer.tokenizer_type == "sentencepiece"
        self.lowercase = bool(getattr(tokenizer, "lowercase", False))
        self.keep_accents = bool(getattr(tokenizer, "keep_accents", False))
        # ALBERT's preprocessing (accents stripped, `` and '' to ") before SentencePiece;
        # DeBERTa-v3's tokenizer gives the text to SentencePiece as it is.
        self.albert_preprocess = bool(getattr(tokenizer, "albert_preprocess", True))
        self.vocabulary = tokenizer.vocabulary
        self.unk_id = tokenizer.unk_id
        # The model's own normalisation (nmt_nfkc), character by character.
        self.charsmap = tokenizer.charsmap if self.sentence_piece else None
        # SentencePiece: the characters a piece stands for alone (never in an unknown one).
        self.alone = frozenset(
            t for i in range(len(self.vocabulary)) if i != self.unk_id
            for t in (self.piece_text(i, True), self.piece_text(i, False)) if len(t) == 1
        ) if self.sentence_piece else frozenset()

    def char(self, char):
        """The normalised form of one character alone."""
        if self.sentence_piece:
            if self.albert_preprocess and not self.keep_accents:
                char = python_strip_combining_marks(char)
            if self.lowercase:
                char = char.lower()
            return self.charsmap.chars(char)
        if is_deleted(char):
            return ""
        if self.lowercase:
            return python_strip_accents(char.lower())
        return unicodedata.normalize("NFC", char)

    def word(self, word):
        """The normalised form of a whole word (the characters' forms in context)."""
        if self.sentence_piece:
            if self.albert_preprocess:
                word = word.replace("``", '"').replace("''", '"')
            if self.albert_preprocess and not self.keep_accents:
                word = python_strip_combining_marks(word)
            if self.lowercase:
                word = word.lower()
            word = self.charsmap.chars(word)
            if self.charsmap.composes:  # its keys of several characters: NFKC's
                word = unicodedata.normalize("NFKC", word)
            return _SPACES.sub(" ", word)
        word = "".join(c for c in word if not is_deleted(c))
        if self.lowercase:
            return python_strip_accents(word.lower())
        return unicodedata.normalize("NFC", word)

    def piece_text(self, token_id, word_start=True):
        """The text a piece spells (without "##", without the "▁" that starts a word, any
        other "▁" a space); None for the unknown token."""
        if token_id == self.unk_id:
            return None
        piece = self.vocabulary[token_id]
        if self.sentence_piece:
            if word_start and piece.startswith(SENTENCE_PIECE_MARK):
                piece = piece[len(SENTENCE_PIECE_MARK):]
            return piece.replace(SENTENCE_PIECE_MARK, " ")
        if piece.startswith(WORD_PIECE_PREFIX) and len(piece) > len(WORD_PIECE_PREFIX):
            return piece[len(WORD_PIECE_PREFIX):]
        return piece


_SPACES = re.compile(" +")


def collapse_spaces(forms):
    """SentencePiece's whitespace rule on the characters' forms: a space followed by another
    (or ending the word) is dropped, so that a run of spaces is one, its last."""
    return ["" if f == " " and (k + 1 == len(forms) or forms[k + 1] == " ") else f
            for k, f in enumerate(forms)]


def _segments(texts, normalized, alone=frozenset()):
    """[(a, b)]: the normalised characters each piece spells, or None where the pieces do not
    spell `normalized`. An unknown piece takes the characters up to the next known piece,
    none of which may be in `alone` (characters a piece stands for: the model would not
    have made them unknown)."""
    position, out = 0, []
    for k, text in enumerate(texts):
        if text is None:
            following = next((t for t in texts[k + 1:] if t), None)
            end = len(normalized) if following is None else normalized.find(following,
                                                                              position + 1)
            if end < 0 or not alone.isdisjoint(normalized[position:end]):
                return None
            out.append((position, end))
            position = end
        elif normalized.startswith(text, position):
            out.append((position, position + len(text)))
            position += len(text)
        else:
            return None
    return out if position == len(normalized) else None


def _spans(owner, segments, count):
    """Each piece's (start, end) characters: from the owner of its first normalised
    character to that of its last; an empty piece ("▁" alone) where its neighbour starts
    (`count`: the word's characters, after its last)."""
    spans = []
    for a, b in segments:
        if a < b:
            spans.append((owner[a], owner[b - 1] + 1))
        else:
            at = owner[a] if a < len(owner) else count
            spans.append((at, at))
    return spans


def _by_characters(forms, segments):
    """Spans where each character is normalised alone: the owner of each normalised char."""
    owner = np.repeat(np.arange(len(forms)), [len(f) for f in forms])
    return _spans(owner, segments, len(forms))


def _by_prefixes(word, rule, normalized, segments):
    """Spans where a character's form depends on its neighbours. The word's units are cut
    where the form of its prefix is a prefix of the word's form; a unit of m characters
    whose form has n gives its j-th normalised character to its character min(j, m - 1)
    (the tokenizers library's alignment: "e\u0301" -> "é" belongs to the "e")."""
    lengths = {k: len(p) for k, p in enumerate(rule.word(word[:i])
                                               for i in range(len(word) + 1))
               if normalized.startswith(p)}

    def owner(i):
        unit = max(k for k, n in lengths.items() if n <= i)
        after = min((k for k, n in lengths.items() if n > i), default=len(word))
        return unit + min(i - lengths[unit], max(after - unit - 1, 0))

    return _spans([owner(i) for i in range(len(normalized))], segments, len(word))


def _whole(forms):
    """Every piece gets the word's normalised span: from its first character that leaves a
    form to its last (as transformers gives an [UNK] or a piece it cannot place)."""
    kept = [i for i, f in enumerate(forms) if f]
    return (kept[0], kept[-1] + 1) if kept else (0, len(forms))


@functools.lru_cache(maxsize=65536)
def _word_spans(word, ids, rule):
    """(spans of the pieces `ids` of `word`, whether the word's form starts with a space)."""
    forms = [rule.char(c) for c in word]
    leading = False
    if rule.sentence_piece:
        forms = collapse_spaces(forms)
        leading = next((f for f in forms if f), "") == " "
    texts = [rule.piece_text(i, k == 0 and not leading) for k, i in enumerate(ids)]
    by_characters = "".join(forms)
    segments = _segments(texts, by_characters, rule.alone)
    if segments is not None:
        return _by_characters(forms, segments), leading
    if len(word) <= PREFIX_LIMIT:
        normalized = rule.word(word)
        trimmed = normalized[:-1] if rule.sentence_piece and normalized.endswith(" ") \
            else normalized
        segments = _segments(texts, trimmed, rule.alone)
        if segments is not None:
            return _by_prefixes(word, rule, normalized, segments), leading
    return [_whole(forms)] * len(ids), leading


def word_offsets(word, ids, rule, start, text):
    """int32 [pieces, 2]: the (start, end) characters in `text` of the pieces `ids` of `word`,
    which starts at `start` in `text`.

    SentencePiece's word-start mark "▁" stands for the whitespace before the word: a word's
    first piece starts there (at the word itself at the start of the text), and a "▁" alone
    covers that one character, as transformers' Metaspace pre-tokenizer reports it; but for
    a word whose form starts with a space of its own (nmt_nfkc's U+200B), which the mark
    spells.
    """
    spans, leading = _word_spans(word, tuple(int(i) for i in ids), rule)
    spans = np.array(spans, np.int32).reshape(-1, 2) + start
    if rule.sentence_piece and len(ids) and not leading and rule.vocabulary[ids[0]].startswith(
            SENTENCE_PIECE_MARK):
        mark = start - 1 if start > 0 and text[start - 1].isspace() else start
        empty = spans[0, 0] == spans[0, 1]
        spans[0, 0] = mark
        if empty:
            spans[0, 1] = mark + 1
    return spans


def byte_pair_offsets(word, tokens, token_bytes, start, lowercase=False):
    """int32 [tokens, 2]: the characters in the text of the byte-level BPE tokens of `word`
    (a GPT-2 piece starting at `start`), as the tokenizers library's ByteLevel offsets with
    `trim_offsets=True` (RoBERTa's): a token covers the characters whose UTF-8 bytes it holds
    (every token holding a byte of a multi-byte character covers that whole character),
    less its leading and trailing "Ġ" (space) symbols; a token of spaces only is an empty
    span at its end."""
    owner = [k for k, char in enumerate(word)
             for _ in read_bytes(char.lower() if lowercase else char)]
    spans = []
    if sum(len(b) for b in token_bytes) != len(owner):  # (a lower-casing that changed bytes)
        return np.array([(start, start + len(word))] * len(tokens), np.int32).reshape(-1, 2)
    position = 0
    for token, data in zip(tokens, token_bytes):
        first = start + owner[position]
        last = start + owner[position + len(data) - 1] + 1
        position += len(data)
        spans.append(trimmed(token, first, last))
    return np.array(spans, np.int32).reshape(-1, 2)


def trimmed(token, first, last):
    """The span (first, last) of a byte-level `token` less the characters of its leading and
    trailing "Ġ" (spaces); a token of spaces only: an empty span at its end."""
    leading = len(token) - len(token.lstrip(WORD_START))
    trailing = len(token) - len(token.rstrip(WORD_START))
    if leading:
        first = min(first + leading, last)
    if trailing and last >= trailing:
        last = max(last - trailing, first)
    return first, last
