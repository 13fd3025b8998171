"""The characters of each wordpiece inside its word, tiling the word (`piece_spans`): what
NER training labels and SQuAD answers need (`kbert.tokenizers.alignment`), where transformers'
offsets (`kbert.tokenizers.offsets`) leave the characters that normalise to nothing to no
token. `kbert.tokenizers.words_graph.piece_spans` is its graph twin."""

import numpy as np

from kbert.tokenizers.normalization import python_strip_accents, python_strip_combining_marks
from kbert.tokenizers.words import _patterns

# How uncased tokenizers strip accents: BERT's (NFD, drop Mn), ALBERT's (NFKD, drop combining).
_ACCENT_RULES = (python_strip_accents, python_strip_combining_marks)


def _normalized_characters(word, lowercase, strip_accents, strip):
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
            char = strip(char)
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
    for strip in _ACCENT_RULES:
        chars = _normalized_characters(word, lowercase, strip_accents, strip)
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
