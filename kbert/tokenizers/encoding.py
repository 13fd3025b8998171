"""Texts -> wordpiece ids with each token's characters in the original text, and tokens ->
text, as transformers' fast tokenizers give them to its pipelines.

Texts are split into words first (the tokenizer's `offset_words`) and every distinct word is
tokenized once, in a few tokenizer calls for a whole list of texts
(`kbert.tokenizers.words.tokenize_words`):

- WordPiece: words by BERT's rule (`words.split_words`: whitespace separates, each
  punctuation and CJK character is a word), which is where BERT's tokenizer splits too;
- SentencePiece (ALBERT): the whitespace-separated chunks, which SentencePiece segments
  one by one, each with its "▁" word-start mark; these are the words of transformers'
  Metaspace pre-tokenizer.
- byte-level BPE (RoBERTa): GPT-2's pieces (`byte_level.pre_tokenize`, the
  tokenizer's own split, " word" with its space), which BPE merges one by one.
So the ids equal those of the whole text, and each token's characters come from its word
(the tokenizer's `word_offsets`: `kbert.tokenizers.offsets`; for a byte-level BPE
`byte_pair_offsets`: a token covers the characters its bytes came from, as transformers' fast
RobertaTokenizer reports them).

`Encoder.ids`, which needs no offsets, tokenizes whole texts in one call instead where that
gives the very same ids (`Encoder._whole_texts`: WordPiece and cased byte-level BPE).

Special-token literals ("[MASK]" in a fill-mask prompt) are tokens of their own when the
caller asks, as transformers' tokenizers match their special tokens in the raw text; a
left-stripped one (RoBERTa's "<mask>") takes the whitespace before it along.
"""

import collections
import re

import numpy as np

from kbert.tokenizers.words import offset_words, tokenize_words

Encoding = collections.namedtuple("Encoding", ["ids", "offsets", "words", "word_spans"])
Encoding.__doc__ = """One text, tokenized (no [CLS] / [SEP]).

Fields:
    ids: int32 [tokens].
    offsets: int32 [tokens, 2]: each token's (start, end) characters in the text.
    words: int32 [tokens]: the index of each token's word; -1 for a special-token literal.
    word_spans: int32 [words, 2]: each word's characters (from its first token's start to
        its last token's end).
"""


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
        self.vocabulary = tokenizer.vocabulary
        self.special_ids = frozenset(int(i) for i in tokenizer.special_ids)
        self._left_stripped = frozenset(getattr(tokenizer, "left_stripped", ()))
        self._left_strip = _python_class(getattr(tokenizer, "left_strip_class", r"\s"))

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
        classify).

        The texts whose whole-text tokenization is known to give those very ids
        (`_whole_texts`) are tokenized whole, in one tokenizer call for all of them; the
        others go word by word as `encode` does. In the input order."""
        texts = list(texts)
        whole = self._whole_texts(texts, specials)
        out = [None] * len(texts)
        if whole:
            ids = tokenize_words(self.tokenizer, [texts[i] for i in whole], texts=True)
            for i in whole:
                out[i] = ids[texts[i]].copy()  # (its own array, as the other path gives)
        rest = [i for i, done in enumerate(out) if done is None]
        if rest:
            layouts, pieces = self._layouts([texts[i] for i in rest], specials)
            for i, layout in zip(rest, layouts):
                out[i] = np.concatenate(
                    [np.array([special], np.int32) if word is None else pieces[word]
                     for word, _, _, special in layout] + [np.zeros([0], np.int32)]
                ).astype(np.int32)
        return out

    def _whole_texts(self, texts, specials):
        """The indices of the texts that `ids` tokenizes whole (`Tokenizer.tokenize`), where
        that gives exactly the ids of `encode` (its words tokenized one by one).

        Only for the kinds whose `whole_text_risks` says they agree, and only texts
        without those characters (WordPiece, cased byte-level BPE; SentencePiece goes word
        by word: tensorflow-text's Viterbi breaks the ties of equal scores, "000" as "0" "00"
        or "00" "0", by the text around them).

        A text that holds a special literal (one of `specials`, or one the tokenizer keeps
        whole with `split_special_tokens=False`; compared case-folded, a superset of what
        either path matches) goes word by word, where the literal is cut as `encode` cuts it.
        """
        tokenizer = self.tokenizer
        risky = tokenizer.whole_text_risks()
        if risky is None:
            return []
        literals = list(specials or ())
        if not tokenizer.split_special_tokens:
            literals += tokenizer.special_tokens
        literals = tuple({literal.casefold() for literal in literals})
        whole = []
        for i, text in enumerate(texts):
            if not isinstance(text, str) or any(r in text for r in risky):
                continue
            if literals:
                folded = text.casefold()
                if any(literal in folded for literal in literals):
                    continue
            whole.append(i)
        return whole

    def _layouts(self, texts, specials):
        """Per text, [(word or None, start, end, special id or None)] in order; and the
        wordpiece ids of every word (`words.tokenize_words`, one call for all)."""
        specials = dict(specials or {})
        pattern = self._pattern(specials) if specials else None
        cut = [self._pieces(text, pattern, specials) for text in texts]
        # Each piece of text between special literals split alone (a byte-level BPE with
        # add_prefix_space puts a space before each, as its graph does).
        segments = [(text, start, end) for text, pieces in zip(texts, cut)
                    for start, end, special in pieces if special is None]
        words = iter(offset_words(self.tokenizer, segments))
        layouts = []
        for pieces in cut:
            layout = []
            for start, end, special in pieces:
                if special is not None:
                    layout.append((None, start, end, special))
                else:
                    layout.extend((w, s, s + len(w), None) for w, s in next(words))
            layouts.append(layout)
        pieces = tokenize_words(
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
            spans = self.tokenizer.word_offsets(word, word_ids, start, text)
            ids.append(word_ids)
            offsets.append(spans)
            words.append(np.full([len(word_ids)], len(word_spans), np.int32))
            word_spans.append((spans[0, 0], spans[-1, 1]))
        if not ids:
            return Encoding(np.zeros([0], np.int32), np.zeros([0, 2], np.int32),
                            np.zeros([0], np.int32), np.zeros([0, 2], np.int32))
        return Encoding(np.concatenate(ids).astype(np.int32), np.concatenate(offsets),
                        np.concatenate(words), np.array(word_spans, np.int32).reshape(-1, 2))

    # === Tokens -> text: the tokenizer's decoder (`kbert.tokenizers.decoding`) ===

    def token(self, token_id):
        return self.vocabulary[int(token_id)]

    def tokens_to_string(self, tokens):
        """transformers' `convert_tokens_to_string` of a fast tokenizer."""
        return self.tokenizer.tokens_to_string(tokens)

    def decode(self, ids, skip_special_tokens=False):
        """transformers' `tokenizer.decode(ids)`."""
        return self.tokenizer.decode(ids, skip_special_tokens)
