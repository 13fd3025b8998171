"""Words with character spans, and wordpieces aligned to the original text."""

import functools
import string
import unicodedata

import numpy as np
import pytest

from kbert.tokenizers import alignment as text_spans
from kbert.tokenizers.alignment import Word, align_texts, align_words, join_words, split_words
from kbert.tokenizers import words as tokenizer_words

_LETTERS = list(string.ascii_lowercase) + list(string.digits)
TINY_VOCABULARY = (
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    + list(string.punctuation)
    + _LETTERS
    + ["##" + c for c in _LETTERS]
    + ["the", "new", "york", "is", "in", "city", "big", "muller", "cafe", "bar", "##bar",
       "tokyo", "paris", "what", "where", "who", "1990", "東", "京", "都", "日", "本"]
)

# Accents (composed and decomposed), CJK, emoji, runs of whitespace of every kind, a
# zero-width space inside a word and a lone one, punctuation glued to words.
TRICKY_TEXT = (
    "Héllo,  Müller's   1990s café\u200bbar in 東京都 😀\t\tNew York e\u0301t\u00e9!"
    "\n\n  Tokyo\u3000is\u00a0big \u200b (the city)...  naïve Ωmega  "
)


@functools.lru_cache(maxsize=None)
def tiny_tokenizer(lowercase=True):
    """A WordPiece tokenizer whose vocabulary spells every ASCII word with ## pieces; emoji
    and most accented or CJK characters are [UNK]."""
    from kbert.tokenizers import WordPieceTokenizer

    return WordPieceTokenizer(TINY_VOCABULARY, lowercase=lowercase)


def test_split_words_follows_bert_basic_tokenizer():
    text = "Héllo, wörld! a$b x+y 東京 is 😀  Müller's café\u200bbar \u200b e\u0301"
    words = split_words(text)
    assert [w.text for w in words] == [
        "Héllo", ",", "wörld", "!", "a", "$", "b", "x", "+", "y", "東", "京", "is", "😀",
        "Müller", "'", "s", "café\u200bbar", "e\u0301"]
    for word in words:
        assert text[word.start : word.end] == word.text


def test_split_words_whitespace_and_deleted_characters():
    # BERT's whitespace: space, \t \n \r and Zs (ideographic space, no-break space); the
    # deleted characters (controls, format characters) join neighbours, never start a word.
    assert [w.text for w in split_words("a\u3000b\u00a0c\td\ne\rf")] == list("abcdef")
    assert [w.text for w in split_words("\u200bx\u200b y\x00z \x00 ")] == ["x", "y\x00z"]
    assert split_words("") == [] and split_words(" \t\u200b\n") == []
    # \x0b and \x1c are whitespace to str.split() but controls to BERT: deleted, not breaks.
    assert [w.text for w in split_words("a\x0bb c\x1cd")] == ["a\x0bb", "c\x1cd"]


def test_split_words_character_classes_match_unicodedata():
    # Sampled over the whole code space, the skipped planes included.
    pattern, deleted = tokenizer_words._patterns()
    for code in range(0, 0x110000, 251):
        char = chr(code)
        category = unicodedata.category(char)
        if category.startswith("C") and char not in "\t\n\r" or code in (0, 0xFFFD):
            assert deleted.fullmatch(char), hex(code)
        else:
            assert not deleted.fullmatch(char), hex(code)
        if category.startswith("P") or 0x4E00 <= code <= 0x9FFF:
            assert [w.text for w in split_words(f"a{char}b")] == ["a", char, "b"], hex(code)


def test_join_words():
    text, words = join_words(["New", "York", "!"])
    assert text == "New York !"
    assert words == [Word("New", 0, 3), Word("York", 4, 8), Word("!", 9, 10)]


def test_alignment_spans_point_into_the_original_text():
    tokenizer = tiny_tokenizer()
    (alignment,) = align_texts([TRICKY_TEXT], tokenizer)
    vocabulary = tokenizer.vocabulary
    pieces = [(vocabulary[i], TRICKY_TEXT[s:e]) for i, (s, e)
              in zip(alignment.piece_ids, alignment.piece_spans)]
    # A piece's span is its own characters where the pieces spell the normalised word.
    assert ("h", "H") in pieces and ("##e", "é") in pieces
    assert ("1990", "1990") in pieces and ("##s", "s") in pieces
    assert ("cafe", "café\u200b") in pieces and ("##bar", "bar") in pieces
    assert ("e", "e\u0301") in pieces  # the combining accent stays with its letter
    assert ("[UNK]", "😀") in pieces and ("[UNK]", "Ωmega") in pieces
    assert ("muller", "Müller") in pieces
    # Pieces are in text order, inside their words, and the words' pieces tile them.
    spans = alignment.piece_spans
    assert np.all(spans[1:, 0] >= spans[:-1, 1]) and np.all(spans[:, 1] > spans[:, 0])
    for index, word in enumerate(alignment.words):
        own = spans[alignment.piece_words == index]
        if len(own):
            assert own[0, 0] == word.start and own[-1, 1] == word.end
            assert np.all(own[1:, 0] == own[:-1, 1])
    # The pieces are those of tokenizing the whole text (the tokenizer's own split).
    whole = tokenizer.tokenize([TRICKY_TEXT]).to_list()[0]
    assert alignment.piece_ids.tolist() == whole


def test_words_without_pieces_keep_the_alignment():
    tokenizer = tiny_tokenizer()
    # A lone combining accent is stripped by the uncased tokenizer: a word with no pieces.
    (alignment,) = align_texts(["new \u0301 york"], tokenizer)
    assert [w.text for w in alignment.words] == ["new", "\u0301", "york"]
    assert alignment.piece_words.tolist() == [0, 2]
    assert alignment.piece_spans.tolist() == [[0, 3], [6, 10]]
    (empty,) = align_texts([" \u200b "], tokenizer)
    assert empty.words == [] and empty.piece_ids.shape == (0,) and empty.piece_spans.shape == (0, 2)


def test_align_words_keeps_each_given_word_whole():
    tokenizer = tiny_tokenizer()
    (alignment,) = align_words([["U.S.", "😀", "new"]], tokenizer)
    assert alignment.text == "U.S. 😀 new"
    vocabulary = tokenizer.vocabulary
    assert [vocabulary[i] for i in alignment.piece_ids] == ["u", ".", "s", ".", "[UNK]", "new"]
    assert alignment.piece_words.tolist() == [0, 0, 0, 0, 1, 2]


def test_cased_and_unmatched_pieces_fall_back_to_the_whole_word():
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "ab", "##cd"]
    spans = text_spans.piece_spans("abcd", [5, 6], vocabulary, lowercase=False)
    assert spans.tolist() == [[0, 2], [2, 4]]
    # The pieces do not spell the word: each gets the whole word.
    spans = text_spans.piece_spans("abXd", [5, 6], vocabulary, lowercase=False)
    assert spans.tolist() == [[0, 4], [0, 4]]


@pytest.mark.parametrize("lowercase", [True, False])
def test_alignment_of_a_sentence_piece_tokenizer(lowercase):
    import os

    from kbert.tokenizers import SentencePieceTokenizer

    model = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tokenizer_parity",
                         "spiece.model")
    tokenizer = SentencePieceTokenizer(model, lowercase=lowercase)
    (alignment,) = align_texts([TRICKY_TEXT], tokenizer)
    spans = alignment.piece_spans
    assert len(alignment.piece_ids) > len(alignment.words) / 2
    # In order, never empty (a lone "▁" piece takes the characters of the piece after it).
    assert np.all(spans[1:, 0] >= spans[:-1, 0]) and np.all(spans[:, 1] > spans[:, 0])
    vocabulary = tokenizer.vocabulary
    pieces = [(vocabulary[i], TRICKY_TEXT[s:e]) for i, (s, e)
              in zip(alignment.piece_ids, alignment.piece_spans)]
    assert ("▁", ",") in pieces and ("bar", "bar") in pieces
    for index, word in enumerate(alignment.words):
        own = spans[alignment.piece_words == index]
        assert np.all(own[:, 0] >= word.start) and np.all(own[:, 1] <= word.end)


def test_lone_surrogates_are_deleted_like_bert_deletes_u_fffd():
    # JSON may hold "\ud800"; it is no character: the tokenizer sees invalid UTF-8 (U+FFFD,
    # deleted), and the word around it stays one word.
    tokenizer = tiny_tokenizer()
    text = "new\ud800york \ud800 city"
    (alignment,) = align_texts([text], tokenizer)
    assert [w.text for w in alignment.words] == ["new\ud800york", "city"]
    vocabulary = tokenizer.vocabulary
    assert [vocabulary[i] for i in alignment.piece_ids][:2] == ["new", "##y"]
    assert alignment.piece_spans[0].tolist() == [0, 4]
