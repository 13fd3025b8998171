"""What kbert's tokenizers share: a tensorflow-text tokenizer behind a normalisation, in the
graph, and Python lookups in the vocabulary."""

import re

import tensorflow as tf

from kbert.tokenizers import packing
from kbert.tokenizers.normalization import lower

_FENCE = b"\xff"  # never in UTF-8


def by_rows(tokenize, text):
    """`tokenize` (strings [N] -> ragged [N, (tokens)]) on strings of any rank [...] ->
    ragged [..., (tokens)]."""
    shape = tf.shape(text, out_type=tf.int64)
    ids = tokenize(tf.reshape(text, [-1]))
    for size in reversed(tf.unstack(shape[1:], num=text.shape.rank - 1)):
        ids = tf.RaggedTensor.from_uniform_row_length(ids, size)
    return ids


class Tokenizer(tf.Module):
    """Base of `WordPieceTokenizer`, `SentencePieceTokenizer` and `BytePairTokenizer`.

    Subclasses set `vocabulary` (the tokens, index = id), `_index` (token -> id), `unk_id`,
    `special_tokens` (the special tokens' literals), `split_special_tokens`, `_tokenizer` (a
    tensorflow-text tokenizer with `tokenize` and `detokenize`) and `_normalize(text)`, and
    implement `starts_word(token)`, the rule that whole-word and n-gram masking go by; their
    words and tokens with offsets (`offset_words`, `word_offsets`, `graph_encode`) and their
    decoders. Each constructor takes `pair_layout=` (`_given_layout`).
    """

    # Special tokens whose literal takes the whitespace before it (transformers' `lstrip`),
    # and the RE2 class of that whitespace.
    left_stripped = ()
    left_strip_class = r"\s"
    # Whether a space is put before each text that has none (a byte-level BPE's option:
    # `kbert.tokenizers.words.offset_words` puts it before each piece of text too).
    add_prefix_space = False
    # Its pair layout (`kbert.tokenizers.packing.PairLayout`): here the kind's default
    # (BERT's; a byte-level BPE's: RoBERTa's), on an instance the `pair_layout=` it was made
    # with, if any (XLM-R: a SentencePiece tokenizer with RoBERTa's layout).
    layout = packing.BERT
    # What each kind says of itself, so that no code outside `kbert.tokenizers` needs to ask
    # which kind it holds:
    # its `kbert.tokenizers.tokenizer_types` name ("wordpiece", "sentencepiece", "bpe");
    tokenizer_type = None
    # whether `kbert.tokenizers.alignment` and the task exports' word alignment find its words by
    # BERT's basic split (WordPiece, SentencePiece), not by GPT-2's pieces (byte-level BPE);
    bert_words = True
    # whether its TFLite twin (`tflite_tokenizer`) gives each token's characters
    # (FastBertTokenizer's `tokenize_with_offsets`), which the TFLite span tasks read;
    tflite_offsets = False
    # the mark of a token that continues the word before it (WordPiece's "##"); None where
    # a word's first token carries the mark instead (transformers then tells subwords by
    # the spaces around them).
    continuation_prefix = None

    def _given_layout(self, pair_layout):
        """Sets the instance's `layout` from a constructor's `pair_layout`: a `PairLayout`,
        a (separators, second_segment) pair or a name of `packing.LAYOUTS`; None keeps the
        kind's."""
        if pair_layout is not None:
            self.layout = packing.PairLayout.of(pair_layout)

    @property
    def pair_separators(self):
        """The separators between a pair's texts (`layout.separators`)."""
        return self.layout.separators

    @property
    def second_segment_id(self):
        """The segment id of a pair's second text (`layout.second_segment`)."""
        return self.layout.second_segment

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
        return by_rows(self.tokenize_keeping_special_tokens, text)

    def tokenize_pieces(self, pieces):
        """`tokenize` for the pieces of texts as `offset_words` cuts them (" word", "."),
        which the texts' own words (`kbert.tokenizers.words.tokenize_words`) join into the
        tokens of the whole text. The same as `tokenize` but for a byte-level BPE with
        `add_prefix_space`, which puts no space before a piece."""
        return self.tokenize(pieces)

    def _tokenize_normalized(self, text):
        return self._tokenizer.tokenize(self._normalize(text))

    def tokenize_keeping_special_tokens(self, text):
        """Valid UTF-8 strings [N] -> ids ragged [N, (tokens)], where each special-token
        literal in the raw text is its token (transformers' default, whatever the
        tokenizer's `split_special_tokens`): the text between them is tokenized apart.

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

    def write_files(self, directory):
        """Writes the files the tokenizer is read back from into `directory` (vocab.txt,
        spiece.model, or vocab.json and merges.txt)."""
        raise NotImplementedError(f"{type(self).__name__} does not say how to write its "
                                  "files; it needs a `write_files(directory)` method.")

    def identity(self):
        """What makes the vocabulary (its tokens, a byte-level BPE's merges, a SentencePiece
        model's bytes): two tokenizers of the same kind with equal identities give the same
        ids for the same settings."""
        return (tuple(self.vocabulary),)

    def checkpoint_assets(self):
        """(vocabulary, lowercase, sentencepiece_model, merges) as `kbert.convert.Checkpoint`
        holds a tokenizer: a token list or None, the lower-casing, a SentencePiece model's
        bytes or None, a byte-level BPE's merge pairs or None."""
        return list(self.vocabulary), bool(getattr(self, "lowercase", False)), None, None

    def tflite_tokenizer(self):
        """The tokenizer's twin made of TFLite kernels (a module with `tokenize`: strings
        [N] -> int32 ids ragged [N, (tokens)]), or a ValueError saying why there is none."""
        raise ValueError(f"A {type(self).__name__} has no TFLite twin: export token ids "
                         "in (kbert.serving.export_tflite) and tokenize on the host.")

    # === Tokens with their characters in the original text (`kbert.tokenizers.encoding`) ===

    def tokenize_with_offsets(self, texts, specials=None):
        """Python strings -> one `kbert.tokenizers.encoding.Encoding` each: int32 `ids`, their
        (start, end) characters in the text as given (`offsets`, transformers' fast
        tokenizers' `offset_mapping`), each token's word and the words' characters.

        specials: {literal: id} of the special-token literals typed in a text that are
            tokens of their own (e.g. {"[MASK]": mask_id}); other literals are text.
        """
        from kbert.tokenizers.encoding import Encoder

        return Encoder(self).encode(texts, specials)

    def graph_encode(self, text, specials):
        """The graph twin of `tokenize_with_offsets`: valid UTF-8 strings [B] -> a dict of
        ragged [B, (tokens)] tensors: `ids` (int32), `starts` / `ends` (int32 code points
        into the text), `literal` (bool: a special literal typed in the text), `words`
        (int32: the token's word, numbered over the batch in order; -1 for a literal), and
        `codes` (ragged [B, (chars)] int32: the texts' code points).

        specials: {literal: id}, as `tokenize_with_offsets`.
        """
        raise NotImplementedError(f"{type(self).__name__} has no graph twin of "
                                  "tokenize_with_offsets; it needs a "
                                  "`graph_encode(text, specials)` method.")

    def align_texts(self, texts):
        """Python strings -> one `kbert.tokenizers.alignment.Alignment` each: the text's words
        with their characters, and the tokens of each word tiling it (NER labels, SQuAD
        answers). Words by BERT's basic split (`kbert.tokenizers.words.split_words`)."""
        from kbert.tokenizers import alignment

        return alignment.bert_word_texts(texts, self)

    def align_words(self, word_lists):
        """Pre-split words (CoNLL sentences) -> one `Alignment` each, over the words joined
        by single spaces, each word tokenized whole."""
        from kbert.tokenizers import alignment

        return alignment.bert_word_lists(word_lists, self)

    @property
    def word_normalization(self):
        """(lower-case, strip accents): how a word is normalised before its pieces spell it,
        character by character, where word alignment gives each piece its characters
        (`kbert.tokenizers.word_pieces.piece_spans` and its graph twin)."""
        lowercase = bool(getattr(self, "lowercase", False))
        return lowercase, lowercase

    def offset_words(self, texts):
        """Per text (a Python string), its words [(word, start)] in order: the pieces this
        tokenizer tokenizes one by one, as transformers' pre-tokenizer splits the text."""
        raise NotImplementedError(f"{type(self).__name__} does not say how it splits text "
                                  "into words; it needs an `offset_words(texts)` method.")

    def whole_text_risks(self):
        """The characters after which tokenizing a whole text may give other ids than its
        `offset_words` one by one (a rule that looks across a word's edge): a tuple, so that
        `Encoder.ids` tokenizes the texts without them whole; None where the two are not
        known to agree (every text then goes word by word). A kind that checks it says so
        (tests/tokenizers/test_encoding_fast_path.py)."""
        return None

    def word_offsets(self, word, ids, start, text):
        """int32 [tokens, 2]: the (start, end) characters in `text` of the tokens `ids` of
        `word`, which starts at `start` (`kbert.tokenizers.offsets.word_offsets`: a token
        covers the characters its normalised characters came from)."""
        from kbert.tokenizers import offsets

        rule = self.__dict__.get("_offsets_rule")
        if rule is None:  # (kept out of tf.Module's attribute tracking)
            rule = self.__dict__["_offsets_rule"] = offsets.Rule(self)
        return offsets.word_offsets(word, ids, rule, start, text)

    # === Packing into model inputs, by the tokenizer's `layout` (`kbert.tokenizers.packing`) ===

    def special_count(self, pair):
        """How many special tokens packing adds to one text (2) or to a pair (3, or 4 for
        RoBERTa's layout)."""
        return packing.special_count(self, pair)

    def pair_layout(self, first, second=None):
        """numpy: [CLS] first [SEP] (second [SEP]) -> (token_ids, segment_ids) int32
        [tokens], unpadded (`packing.pair_layout`)."""
        return packing.pair_layout(self, first, second)

    def pack_row(self, first, second, sequence_length):
        """numpy: one row padded to `sequence_length` (`packing.packed_row`): (token_ids,
        segment_ids, padding_mask) and the position of `second`'s first token."""
        return packing.packed_row(first, second, sequence_length, self.cls_id, self.sep_id,
                                  self.pad_id, *self.layout)

    def pack(self, segments, sequence_length):
        """In the graph: one or two ragged id tensors [B, (pieces)] -> model inputs padded
        to `sequence_length`, a pair truncated longest first (`packing.pack_segments`)."""
        return packing.pack_segments(self, segments, sequence_length)

    # === Tokens -> text, as transformers' fast tokenizers (`kbert.tokenizers.decoding`) ===

    def tokens_to_string(self, tokens):
        """transformers' `convert_tokens_to_string` of a fast tokenizer: its decoder on a
        list of tokens (strings)."""
        raise NotImplementedError(f"{type(self).__name__} has no decoder; it needs a "
                                  "`tokens_to_string(tokens)` method.")

    def decode(self, ids, skip_special_tokens=False):
        """transformers' `tokenizer.decode(ids)` (Python ints or an array): the decoder, then
        the kind's cleanup (WordPiece's `clean_up_tokenization`)."""
        special = frozenset(int(i) for i in self.special_ids)
        return self._decode([int(i) for i in ids
                             if not (skip_special_tokens and int(i) in special)])

    def _decode(self, ids):
        return self.tokens_to_string([self.vocabulary[i] for i in ids])

    def graph_tokens_to_string(self, tokens):
        """`tokens_to_string` of each row of ragged strings [N, (tokens)] -> strings [N], in
        the graph."""
        raise NotImplementedError(f"{type(self).__name__} has no graph decoder; it needs a "
                                  "`graph_tokens_to_string(tokens)` method.")

    def graph_decode(self, token_ids):
        """`decode` of each row of ragged ids [N, (tokens)] -> strings [N], in the graph."""
        raise NotImplementedError(f"{type(self).__name__} has no graph decoder; it needs a "
                                  "`graph_decode(token_ids)` method.")

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


class PieceTokenizer(Tokenizer):
    """A tokenizer whose tokens are pieces of the text, decoded by joining them: WordPiece's
    ("##" continues a word) and SentencePiece's (`metaspace`: "▁" starts a word, a space)."""

    metaspace = False

    def tokens_to_string(self, tokens):
        from kbert.tokenizers import decoding

        if self.metaspace:
            return decoding.metaspace_string(tokens)
        return decoding.word_piece_string(tokens)

    def graph_tokens_to_string(self, tokens):
        from kbert.tokenizers import decoding

        return decoding.graph_pieces_string(tokens, metaspace=self.metaspace)

    def graph_decode(self, token_ids):
        from kbert.tokenizers import decoding

        return decoding.graph_pieces_decode(tf.constant(self.vocabulary), token_ids,
                                            metaspace=self.metaspace)
