"""Texts -> wordpiece ids with each token's characters in the original text, and tokens ->
text, as transformers' fast tokenizers give them to its pipelines.

Texts are split into words first and every distinct word is tokenized once, in a few
tokenizer calls for a whole list of texts (`kbert.data.text_spans.tokenize_words`):
- WordPiece: words by BERT's rule (`text_spans.split_words`: whitespace separates, each
  punctuation and CJK character is a word), which is where BERT's tokenizer splits too;
- SentencePiece (ALBERT): the whitespace-separated chunks, which SentencePiece segments
  one by one, each with its "▁" word-start mark; these are the words of transformers'
  Metaspace pre-tokenizer.
So the ids equal those of the whole text, and each token's characters come from its word
(`kbert.pipelines.offsets`).

Special-token literals ("[MASK]" in a fill-mask prompt) are tokens of their own when the
caller asks, as transformers' tokenizers match their special tokens in the raw text.
"""

import collections
import re

import numpy as np

from kbert.data import text_spans
from kbert.pipelines.offsets import SENTENCE_PIECE_MARK, WORD_PIECE_PREFIX, Rule, word_offsets

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


class Encoder:
    """Encodes texts for one kbert tokenizer (`WordPieceTokenizer` or
    `SentencePieceTokenizer`) and turns tokens back into text as transformers does."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.rule = Rule(tokenizer)
        self.sentence_piece = self.rule.sentence_piece
        self.vocabulary = tokenizer.vocabulary
        self.special_ids = frozenset(int(i) for i in tokenizer.special_ids)

    def _words(self, text, start, end):
        """(word, start) of the words of text[start:end]."""
        if self.sentence_piece:
            return [(m.group(), m.start() + start) for m in _CHUNK.finditer(text[start:end])]
        return [(w.text, w.start + start) for w in text_spans.split_words(text[start:end])]

    @staticmethod
    def _pieces(text, pattern, specials):
        """[(start, end, special id or None)] of `text` cut at the special literals."""
        if pattern is None:
            return [(0, len(text), None)]
        out, position = [], 0
        for match in pattern.finditer(text):
            out.append((position, match.start(), None))
            out.append((match.start(), match.end(), specials[match.group()]))
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
        pattern = re.compile("|".join(re.escape(s) for s in sorted(
            specials, key=len, reverse=True))) if specials else None
        layouts = []
        for text in texts:
            layout = []
            for start, end, special in self._pieces(text, pattern, specials):
                if special is not None:
                    layout.append((None, start, end, special))
                else:
                    layout.extend((w, s, s + len(w), None) for w, s in self._words(text, start,
                                                                                   end))
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

    # === Tokens -> text ===

    def token(self, token_id):
        return self.vocabulary[int(token_id)]

    def tokens_to_string(self, tokens):
        """transformers' `convert_tokens_to_string` of a fast tokenizer: its decoder
        (WordPiece: "##" pieces joined, a space before the others, " ," -> ","; Metaspace:
        "▁" -> " ", the first one dropped)."""
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
        tokenizers clean up by default) `clean_up_tokenization`."""
        tokens = [self.token(i) for i in ids
                  if not (skip_special_tokens and int(i) in self.special_ids)]
        text = self.tokens_to_string(tokens)
        return text if self.sentence_piece else _replace_all(text, _CLEAN_UP)
