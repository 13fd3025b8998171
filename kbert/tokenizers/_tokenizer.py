"""What kbert's tokenizers share: a tensorflow-text tokenizer behind a normalisation, in the
graph, and Python lookups in the vocabulary."""

import re

import tensorflow as tf

from kbert.tokenizers.normalization import lower

_FENCE = b"\xff"  # never in UTF-8


class Tokenizer(tf.Module):
    """Base of `WordPieceTokenizer` and `SentencePieceTokenizer`.

    Subclasses set `vocabulary` (the tokens, index = id), `_index` (token -> id), `unk_id`,
    `special_tokens` (the special tokens' literals), `split_special_tokens`, `_tokenizer` (a
    tensorflow-text tokenizer with `tokenize` and `detokenize`) and `_normalize(text)`, and
    implement `starts_word(token)`, the rule that whole-word and n-gram masking go by.
    """

    # Special tokens whose literal takes the whitespace before it (transformers' `lstrip`),
    # and the RE2 class of that whitespace.
    left_stripped = ()
    left_strip_class = r"\s"
    # How many separators stand between the two texts of a pair: 1 for BERT's
    # [CLS] a [SEP] b [SEP], 2 for RoBERTa's <s> a </s></s> b </s>.
    pair_separators = 1

    @property
    def vocabulary_size(self):
        return len(self.vocabulary)

    def tokenize(self, text):
        """Strings [...] -> int32 ids, ragged [..., (tokens)]. No [CLS]/[SEP] is added.

        A scalar string (as `tf.data.Dataset.map` passes) gives a dense [tokens] vector.
        Special-token literals typed in the text ("[SEP]") are split like any text, unless
        the tokenizer was made with `split_special_tokens=False`.
        """
        text = tf.convert_to_tensor(text, tf.string)
        if text.shape.rank == 0:
            # tensorflow-text's normalizer fails on scalars in graph mode: use a batch of one.
            return self.tokenize(text[tf.newaxis])[0]
        # Invalid UTF-8 becomes U+FFFD instead of failing the whole batch.
        text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace")
        if self.split_special_tokens:
            return self._tokenize_normalized(text)
        shape = tf.shape(text, out_type=tf.int64)
        ids = self._tokenize_keeping_special_tokens(tf.reshape(text, [-1]))
        for size in reversed(tf.unstack(shape[1:], num=text.shape.rank - 1)):
            ids = tf.RaggedTensor.from_uniform_row_length(ids, size)
        return ids

    def _tokenize_normalized(self, text):
        return self._tokenizer.tokenize(self._normalize(text))

    def _tokenize_keeping_special_tokens(self, text):
        """[strings] -> [strings, (tokens)], where each special-token literal in the raw text
        is its token (transformers' default): the text between them is tokenized apart.

        As in transformers, an uncased tokenizer lower-cases the text before it looks for
        the literals: "<UNK>" is ALBERT's "<unk>" too, while "[sep]" is no BERT "[SEP]".
        """
        folded = [getattr(self, "lowercase", False) and token == token.lower()
                  for token in self.special_tokens]
        literals = {token: f"(?i:{re.escape(token)})" if fold else re.escape(token)
                    for token, fold in zip(self.special_tokens, folded)}
        # A left-stripped token (RoBERTa's "<mask>") takes the whitespace before it along.
        stripped = [token for token in self.special_tokens if token in self.left_stripped]
        others = [token for token in self.special_tokens if token not in self.left_stripped]
        groups = [f"{self.left_strip_class}*(" + "|".join(literals[t] for t in stripped) + ")"
                  ] if stripped else []
        groups += ["(" + "|".join(literals[t] for t in others) + ")"] if others else []
        # The literals are fenced with a byte that valid UTF-8 never holds, then split on it.
        # (tensorflow-text's regex_split would do it in one step, but it drops all after a NUL.)
        fenced = tf.strings.regex_replace(
            text, "|".join(groups),
            _FENCE + "".join(f"\\{i + 1}" for i in range(len(groups))).encode() + _FENCE)
        pieces = tf.strings.split(fenced, _FENCE)  # [strings, (pieces)]
        special_ids = tf.fill(tf.shape(pieces.flat_values), -1)
        for token, fold in zip(self.special_tokens, folded):
            # RE2's case folding only proposes: the piece must lower-case (as Python does)
            # to the literal.
            piece = lower(pieces.flat_values) if fold else pieces.flat_values
            special_ids = tf.where(tf.equal(piece, token), self._index[token], special_ids)
        is_special = special_ids >= 0
        # A piece gives either its text's tokens or its special token, never both.
        ids = self._tokenize_normalized(tf.where(is_special, "", pieces.flat_values))
        specials = tf.RaggedTensor.from_row_lengths(tf.boolean_mask(special_ids, is_special),
                                                    tf.cast(is_special, tf.int64))
        ids = tf.concat([ids, tf.cast(specials, ids.dtype)], axis=1)  # [pieces, (tokens)]
        return pieces.with_flat_values(ids).merge_dims(1, 2)

    def starts_word(self, token):
        """Whether `token` begins a word, or continues the word before it: each tokenizer's
        own rule (WordPiece: no "##"; SentencePiece: a "▁" first). Whole-word and n-gram
        masking (`kbert.data.Masker`) keep the tokens of a word together by it."""
        raise NotImplementedError(f"{type(self).__name__} does not say where its words start; "
                                  "it needs a `starts_word(token)` method.")

    def is_placeholder(self, token):
        """Whether `token` is a vocabulary slot that text never gives and masking never
        predicts nor draws as a random token (WordPiece's "[unused0]"). The special tokens
        are in `special_ids` apart from this."""
        return False

    def detokenize(self, ids):
        """Ids [..., (tokens)] (ragged or dense) -> strings [...], the pieces merged."""
        return self._tokenizer.detokenize(ids)

    def token_to_id(self, token):
        """Python lookup; unknown tokens give the unknown token's id."""
        return self._index.get(token, self.unk_id)

    def id_to_token(self, token_id):
        if not 0 <= token_id < len(self.vocabulary):
            raise ValueError(
                f"Token id {token_id} is out of range [0, {len(self.vocabulary)})."
            )
        return self.vocabulary[token_id]
