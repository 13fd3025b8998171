"""Texts -> wordpiece ids with each token's characters in the original text, and tokens ->
text, as transformers' fast tokenizers give them to its pipelines.

Texts are split into words first and every distinct word is tokenized once, in a few
tokenizer calls for a whole list of texts (`kbert.data.text_spans.tokenize_words`):
- WordPiece: words by BERT's rule (`text_spans.split_words`: whitespace separates, each
  punctuation and CJK character is a word), which is where BERT's tokenizer splits too;
- SentencePiece (ALBERT): the whitespace-separated chunks, which SentencePiece segments
  one by one, each with its "▁" word-start mark; these are the words of transformers'
  Metaspace pre-tokenizer.
- byte-level BPE (RoBERTa): GPT-2's pieces (`byte_pair_tokenizer.pre_tokenize`, the
  tokenizer's own split, " word" with its space), which BPE merges one by one.
So the ids equal those of the whole text, and each token's characters come from its word
(`kbert.pipelines.offsets`; for a byte-level BPE `byte_pair_offsets`: a token covers the
characters its bytes came from, as transformers' fast RobertaTokenizer reports them).

Special-token literals ("[MASK]" in a fill-mask prompt) are tokens of their own when the
caller asks, as transformers' tokenizers match their special tokens in the raw text; a
left-stripped one (RoBERTa's "<mask>") takes the whitespace before it along.
"""

import collections
import re

import numpy as np

from kbert.data import text_spans
from kbert.data.text_spans import byte_pair_offsets, byte_pair_words
from kbert.pipelines.offsets import SENTENCE_PIECE_MARK, WORD_PIECE_PREFIX, Rule, word_offsets
from kbert.tokenizers import BytePairTokenizer
from kbert.tokenizers import byte_pair_tokenizer

Encoding = collections.namedtuple("Encoding", ["ids", "offsets", "words", "word_spans"])
Encoding.__doc__ = """One text, tokenized (no [CLS] / [SEP]).

Fields:
    ids: int32 [tokens].
    offsets: int32 [tokens, 2]: each token's (start, end) characters in the text.
    words: int32 [tokens]: the index of each token's word; -1 for a special-token literal.
    word_spans: int32 [words, 2]: each word's characters (from its first token's start to
        its last token's end).
"""

_CHUNK = re.compile(r"\S+")
# transformers' `clean_up_tokenization` (decode with clean_up_tokenization_spaces=True).
_CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
             (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))
# The per-token cleanup of the tokenizers library's WordPiece decoder.
_DECODER_CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
                     (" n't", "n't"), (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"),
                     (" 've", "'ve"), (" 're", "'re"))


def _replace_all(text, pairs):
    for old, new in pairs:
        text = text.replace(old, new)
    return text


def _python_class(re2_class):
    """An RE2 character class with \\x{...} escapes (`Tokenizer.left_strip_class`) in Python's
    `re` syntax."""
    return re.sub(r"\\x\{([0-9a-fA-F]+)\}", lambda m: f"\\U{int(m.group(1), 16):08x}",
                  re2_class)


class Encoder:
    """Encodes texts for one kbert tokenizer (`WordPieceTokenizer`, `SentencePieceTokenizer`
    or `BytePairTokenizer`) and turns tokens back into text as transformers does."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.rule = Rule(tokenizer)
        self.sentence_piece = self.rule.sentence_piece
        self.byte_pair = isinstance(tokenizer, BytePairTokenizer)
        if self.byte_pair and tokenizer.add_prefix_space:
            raise ValueError("The pipelines take a BytePairTokenizer with RoBERTa's "
                             "add_prefix_space=False (its checkpoints' setting), not True.")
        self.vocabulary = tokenizer.vocabulary
        self.special_ids = frozenset(int(i) for i in tokenizer.special_ids)
        self._left_stripped = frozenset(getattr(tokenizer, "left_stripped", ()))
        self._left_strip = _python_class(getattr(tokenizer, "left_strip_class", r"\s"))
        self._bytes = None  # a byte-level BPE's tokens as bytes, made on first use
        self._byte_of = None  # its symbol -> byte table, made on first use

    def _words(self, segments):
        """Per (text, start, end), the (word, start) of the words of text[start:end]."""
        if self.byte_pair:
            split = byte_pair_words([text[start:end] for text, start, end in segments])
            return [[(w, s + start) for w, s in words]
                    for (_, start, _), words in zip(segments, split)]
        if self.sentence_piece:
            return [[(m.group(), m.start() + start) for m in _CHUNK.finditer(text[start:end])]
                    for text, start, end in segments]
        return [[(w.text, w.start + start) for w in text_spans.split_words(text[start:end])]
                for text, start, end in segments]

    def _pattern(self, specials):
        """The regex of the special literals (longest first); a left-stripped one (RoBERTa's
        "<mask>") with the whitespace before it. Group i + 1 is the i-th literal."""
        literals = sorted(specials, key=len, reverse=True)
        return re.compile("|".join(
            (f"{self._left_strip}*" if literal in self._left_stripped else "")
            + f"({re.escape(literal)})" for literal in literals)), literals

    @staticmethod
    def _pieces(text, pattern, specials):
        """[(start, end, special id or None)] of `text` cut at the special literals."""
        if pattern is None:
            return [(0, len(text), None)]
        pattern, literals = pattern
        out, position = [], 0
        for match in pattern.finditer(text):
            out.append((position, match.start(), None))
            out.append((match.start(), match.end(), specials[literals[match.lastindex - 1]]))
            position = match.end()
        out.append((position, len(text), None))
        return out

    def encode(self, texts, specials=None):
        """`texts` (Python strings) -> one `Encoding` each.

        specials: {literal: id} of the special-token literals that are tokens of their own
            (e.g. {"[MASK]": mask_id}); other literals are text.
        """
        layouts, pieces = self._layouts(texts, specials)
        return [self._encoding(text, layout, pieces) for text, layout in zip(texts, layouts)]

    def ids(self, texts, specials=None):
        """Only the ids of `encode`'s encodings (`specials` as there), without the work of
        the offsets: for what no answer points into (a question, a hypothesis, a text to
        classify)."""
        layouts, pieces = self._layouts(texts, specials)
        return [np.concatenate([np.array([special], np.int32) if word is None else pieces[word]
                                for word, _, _, special in layout] + [np.zeros([0], np.int32)])
                .astype(np.int32) for layout in layouts]

    def _layouts(self, texts, specials):
        """Per text, [(word or None, start, end, special id or None)] in order; and the
        wordpiece ids of every word (`text_spans.tokenize_words`, one call for all)."""
        specials = dict(specials or {})
        pattern = self._pattern(specials) if specials else None
        cut = [self._pieces(text, pattern, specials) for text in texts]
        words = iter(self._words([(text, start, end) for text, pieces in zip(texts, cut)
                                  for start, end, special in pieces if special is None]))
        layouts = []
        for pieces in cut:
            layout = []
            for start, end, special in pieces:
                if special is not None:
                    layout.append((None, start, end, special))
                else:
                    layout.extend((w, s, s + len(w), None) for w, s in next(words))
            layouts.append(layout)
        pieces = text_spans.tokenize_words(
            self.tokenizer, [w for layout in layouts for w, *_ in layout if w is not None])
        return layouts, pieces

    def _encoding(self, text, layout, pieces):
        ids, offsets, words, word_spans = [], [], [], []
        for word, start, end, special in layout:
            if special is not None:
                ids.append(np.array([special], np.int32))
                offsets.append(np.array([[start, end]], np.int32))
                words.append(np.array([-1], np.int32))
                continue
            word_ids = pieces[word]
            if not len(word_ids):
                continue  # only deleted characters or a lone accent: no token
            if self.byte_pair:
                spans = byte_pair_offsets(word, [self.vocabulary[i] for i in word_ids],
                                          [self.token_bytes[i] for i in word_ids], start,
                                          self.tokenizer.lowercase)
            else:
                spans = word_offsets(word, word_ids, self.rule, start, text)
            ids.append(word_ids)
            offsets.append(spans)
            words.append(np.full([len(word_ids)], len(word_spans), np.int32))
            word_spans.append((spans[0, 0], spans[-1, 1]))
        if not ids:
            return Encoding(np.zeros([0], np.int32), np.zeros([0, 2], np.int32),
                            np.zeros([0], np.int32), np.zeros([0, 2], np.int32))
        return Encoding(np.concatenate(ids).astype(np.int32), np.concatenate(offsets),
                        np.concatenate(words), np.array(word_spans, np.int32).reshape(-1, 2))

    @property
    def token_bytes(self):
        """A byte-level BPE's tokens as bytes (index = id; special tokens: their literal)."""
        if self._bytes is None:
            self._bytes = BytePairTokenizer._token_bytes(self.vocabulary)
        return self._bytes

    # === Tokens -> text ===

    def token(self, token_id):
        return self.vocabulary[int(token_id)]

    def tokens_to_string(self, tokens):
        """transformers' `convert_tokens_to_string` of a fast tokenizer: its decoder
        (WordPiece: "##" pieces joined, a space before the others, " ," -> ","; Metaspace:
        "▁" -> " ", the first one dropped; ByteLevel: the tokens' bytes joined, a broken
        character as U+FFFD)."""
        if self.byte_pair:
            if self._byte_of is None:
                self._byte_of = {symbol: bytes([byte]) for byte, symbol
                                 in enumerate(byte_pair_tokenizer.bytes_to_unicode())}
            return b"".join(b"".join(self._byte_of[c] for c in token)
                            if all(c in self._byte_of for c in token)
                            else token.encode("utf-8") for token in tokens).decode(
                                "utf-8", errors="replace")
        if self.sentence_piece:
            text = "".join(tokens).replace(SENTENCE_PIECE_MARK, " ")
            return text[1:] if tokens and tokens[0].startswith(SENTENCE_PIECE_MARK) else text
        out = []
        for i, token in enumerate(tokens):
            if i:
                token = (token[len(WORD_PIECE_PREFIX):] if token.startswith(WORD_PIECE_PREFIX)
                         else " " + token)
            out.append(_replace_all(token, _DECODER_CLEAN_UP))
        return "".join(out)

    def decode(self, ids, skip_special_tokens=False):
        """transformers' `tokenizer.decode(ids)`: the decoder, then (WordPiece, whose
        tokenizers clean up by default) `clean_up_tokenization`. A byte-level BPE (RoBERTa,
        which does not clean up) joins its tokens' bytes, a broken character as U+FFFD."""
        ids = [int(i) for i in ids if not (skip_special_tokens and int(i) in self.special_ids)]
        if self.byte_pair:
            return b"".join(self.token_bytes[i] for i in ids).decode("utf-8", errors="replace")
        tokens = [self.token(i) for i in ids]
        text = self.tokens_to_string(tokens)
        return text if self.sentence_piece else _replace_all(text, _CLEAN_UP)
