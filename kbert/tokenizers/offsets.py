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
lower-casing), character by character where that is exact, and by prefixes of the word
where one character's form depends on its neighbours (NFC, "``" -> '"').
"""

import bisect
import functools
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

    def char(self, char):
        """The normalised form of one character alone."""
        if self.sentence_piece:
            if self.albert_preprocess and not self.keep_accents:
                char = python_strip_combining_marks(char)
            if self.lowercase:
                char = char.lower()
            return unicodedata.normalize("NFKC", char)  # SentencePiece's nmt_nfkc
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
            return unicodedata.normalize("NFKC", word)
        word = "".join(c for c in word if not is_deleted(c))
        if self.lowercase:
            return python_strip_accents(word.lower())
        return unicodedata.normalize("NFC", word)

    def piece_text(self, token_id):
        """The text a piece spells (without "##" / "▁"); None for the unknown token."""
        if token_id == self.unk_id:
            return None
        piece = self.vocabulary[token_id]
        prefix = SENTENCE_PIECE_MARK if self.sentence_piece else WORD_PIECE_PREFIX
        if piece.startswith(prefix) and (len(piece) > len(prefix) or self.sentence_piece):
            return piece[len(prefix):]
        return piece


def _segments(texts, normalized):
    """[(a, b)]: the normalised characters each piece spells, or None where the pieces do not
    spell `normalized`. An unknown piece takes the characters up to the next known piece."""
    position, out = 0, []
    for k, text in enumerate(texts):
        if text is None:
            following = next((t for t in texts[k + 1:] if t), None)
            end = len(normalized) if following is None else normalized.find(following,
                                                                              position + 1)
            if end < 0:
                return None
            out.append((position, end))
            position = end
        elif normalized.startswith(text, position):
            out.append((position, position + len(text)))
            position += len(text)
        else:
            return None
    return out if position == len(normalized) else None


def _by_characters(forms, segments):
    """Spans where each character is normalised alone: the owner of each normalised char."""
    owner = np.repeat(np.arange(len(forms)), [len(f) for f in forms])
    spans = []
    for a, b in segments:
        if a < b:
            spans.append((owner[a], owner[b - 1] + 1))
        else:  # an empty piece ("▁" alone): where its neighbour starts
            at = owner[a] if a < len(owner) else len(forms)
            spans.append((at, at))
    return spans


def _by_prefixes(word, rule, normalized, segments):
    """Spans where a character's form depends on its neighbours: a piece starts at the last
    prefix of the word whose form its text has not begun yet, and ends at the first prefix
    whose form holds all of its text."""
    prefixes = [rule.word(word[:i]) for i in range(len(word) + 1)]
    spans = []
    for a, b in segments:
        start = max(i for i, p in enumerate(prefixes) if normalized[:a].startswith(p))
        end = next(i for i, p in enumerate(prefixes) if p.startswith(normalized[:b]))
        spans.append((start, max(start, end)))
    return spans


def _whole(forms):
    """Every piece gets the word's normalised span: from its first character that leaves a
    form to its last (as transformers gives an [UNK] or a piece it cannot place)."""
    kept = [i for i, f in enumerate(forms) if f]
    return (kept[0], kept[-1] + 1) if kept else (0, len(forms))


@functools.lru_cache(maxsize=65536)
def _word_spans(word, ids, rule):
    forms = [rule.char(c) for c in word]
    texts = [rule.piece_text(i) for i in ids]
    by_characters = "".join(forms)
    segments = _segments(texts, by_characters)
    if segments is not None:
        return _by_characters(forms, segments)
    if len(word) <= PREFIX_LIMIT:
        normalized = rule.word(word)
        segments = _segments(texts, normalized)
        if segments is not None:
            return _by_prefixes(word, rule, normalized, segments)
    return [_whole(forms)] * len(ids)


def word_offsets(word, ids, rule, start, text):
    """int32 [pieces, 2]: the (start, end) characters in `text` of the pieces `ids` of `word`,
    which starts at `start` in `text`.

    SentencePiece's word-start mark "▁" stands for the whitespace before the word: a word's
    first piece starts there (at the word itself at the start of the text), and a "▁" alone
    covers that one character, as transformers' Metaspace pre-tokenizer reports it.
    """
    spans = np.array(_word_spans(word, tuple(int(i) for i in ids), rule),
                     np.int32).reshape(-1, 2) + start
    if rule.sentence_piece and len(ids) and rule.vocabulary[ids[0]].startswith(
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
             for _ in (char.lower() if lowercase else char).encode("utf-8", "replace")]
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
