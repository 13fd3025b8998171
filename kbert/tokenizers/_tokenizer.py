"""What kbert's tokenizers share: a tensorflow-text tokenizer behind a normalisation, in the
graph, and Python lookups in the vocabulary."""

import tensorflow as tf


class Tokenizer(tf.Module):
    """Base of `WordPieceTokenizer` and `SentencePieceTokenizer`.

    Subclasses set `vocabulary` (the tokens, index = id), `_index` (token -> id), `unk_id`,
    `_tokenizer` (a tensorflow-text tokenizer with `tokenize` and `detokenize`) and
    `_normalize(text)`.
    """

    @property
    def vocabulary_size(self):
        return len(self.vocabulary)

    def tokenize(self, text):
        """Strings [...] -> int32 ids, ragged [..., (tokens)]. No [CLS]/[SEP] is added.

        A scalar string (as `tf.data.Dataset.map` passes) gives a dense [tokens] vector.
        """
        text = tf.convert_to_tensor(text, tf.string)
        # Invalid UTF-8 becomes U+FFFD instead of failing the whole batch.
        text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace")
        text = self._normalize(text)
        if text.shape.rank == 0:
            # tensorflow-text's normalizer fails on scalars in graph mode: use a batch of one.
            return self._tokenizer.tokenize(text[tf.newaxis])[0]
        return self._tokenizer.tokenize(text)

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
