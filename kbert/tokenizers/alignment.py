"""Words of the original text with their character spans, and the tokens of each word,
tiling it (`Alignment`): what NER labels per word, entities by character and extractive QA
answers by character need, so that a prediction maps back to an exact substring of the
original text. Each tokenizer aligns by its own words (`Tokenizer.align_texts`,
`Tokenizer.align_words`); `align_texts(texts, tokenizer)` and `align_words` ask it.

WordPiece and SentencePiece: the tokenizers normalise text (clean, lower-case, NFD, strip
accents) before they split it, so offsets into the normalised string do not point into the
original. Alignment is by word instead: the original text is split into words by BERT's
BasicTokenizer rule (whitespace separates; each punctuation and CJK character is a word of
its own; the characters BERT deletes (NUL, U+FFFD, controls, format characters) join their
neighbours and never start or end a word), every word is tokenized alone, and each piece
keeps its word and, where the pieces spell the word normalised as the tokenizer says
(`Tokenizer.word_normalization`), its own characters (else the whole word's).

A byte-level BPE (RoBERTa's `BytePairTokenizer`) is aligned as the pipelines' encoder does
it instead: the words are GPT-2's pieces (`byte_pair_words`), each tokenized with its leading
space (" word" -> "Ġword"; every pre-split CoNLL word gets one, as transformers'
`add_prefix_space=True`), and each token covers the characters its bytes came from (the
tokenizer's `word_offsets`).

The words themselves (`split_words`, `byte_pair_words`), `tokenize_words` and the pieces'
characters in a word (`piece_spans`) are `kbert.tokenizers.words` and
`kbert.tokenizers.word_pieces`'.
"""

import collections
import functools

import numpy as np

from kbert.tokenizers.word_pieces import piece_spans
from kbert.tokenizers.words import (  # noqa: F401 (Word, join_words, utf8: re-exported)
    Word,
    byte_pair_words,
    join_words,
    offset_words,
    split_words,
    tokenize_words,
    utf8,
)

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


def _byte_pair_aligner(tokenizer, word_texts):
    """`_aligner` for a byte-level BPE (RoBERTa): `word_texts` are GPT-2 pieces with their
    leading space (" word" -> "Ġword"); spans by the tokenizer's `word_offsets` (the
    pipeline's)."""
    pieces = tokenize_words(tokenizer, word_texts)

    @functools.lru_cache(maxsize=None)
    def spans_of(piece):
        return tokenizer.word_offsets(piece, pieces[piece], 0, piece)

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
    lowercase, strip_accents = tokenizer.word_normalization
    vocabulary = tokenizer.vocabulary

    @functools.lru_cache(maxsize=None)
    def spans_of(word):
        return piece_spans(word, pieces[word], vocabulary, lowercase, strip_accents)

    return pieces, spans_of


def align_texts(texts, tokenizer):
    """Original texts -> one `Alignment` each, by the tokenizer's words
    (`Tokenizer.align_texts`).

    All distinct words of all texts are tokenized together, in a few tokenizer calls.
    """
    return tokenizer.align_texts(texts)


def align_words(word_lists, tokenizer):
    """Pre-split words (CoNLL sentences) -> one `Alignment` each, over the words joined by
    single spaces (`Tokenizer.align_words`). Each given word is tokenized whole: a word with
    punctuation inside ("U.S.") keeps all its pieces under its one index."""
    return tokenizer.align_words(word_lists)


def bert_word_texts(texts, tokenizer):
    """`align_texts` by BERT's words (`split_words`): WordPiece and SentencePiece."""
    words = [split_words(text) for text in texts]
    pieces, spans_of = _aligner(tokenizer, [w.text for ws in words for w in ws])
    return [_align(text, ws, pieces, spans_of) for text, ws in zip(texts, words)]


def bert_word_lists(word_lists, tokenizer):
    """`align_words` by BERT's words: each word tokenized alone."""
    joined = [join_words(list(ws)) for ws in word_lists]
    pieces, spans_of = _aligner(tokenizer, [w for ws in word_lists for w in ws])
    return [_align(text, ws, pieces, spans_of) for text, ws in joined]


def byte_pair_texts(texts, tokenizer):
    """`align_texts` of a byte-level BPE (RoBERTa): GPT-2's pieces less their leading space
    are the words, each piece tokenized with it as the pipelines' encoder does, so
    " word" -> "Ġword" (and the text's first word too with `add_prefix_space`)."""
    splits = offset_words(tokenizer, [(text, 0, len(text)) for text in texts],
                          split=byte_pair_words)
    pieces, spans_of = _byte_pair_aligner(tokenizer, [p for s in splits for p, _ in s])
    return [_byte_pair_align(text, split, pieces, spans_of)
            for text, split in zip(texts, splits)]


def byte_pair_word_lists(word_lists, tokenizer):
    """`align_words` of a byte-level BPE: transformers' add_prefix_space=True, " word"
    each."""
    joined = [join_words(list(ws)) for ws in word_lists]
    pieces, spans_of = _byte_pair_aligner(tokenizer, [" " + w for ws in word_lists
                                                      for w in ws])
    return [_byte_pair_align(text, [(" " + w.text, w.start - 1) for w in ws], pieces,
                             spans_of) for text, ws in joined]


def char_offset(text, byte_offset):
    """A UTF-8 byte offset into `text` -> its character (code point) offset; -1 stays -1."""
    if byte_offset < 0:
        return -1
    return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))
