"""The tokenizers of a tokenizer.json (`kbert.tokenizers.tokenizer_json.reading` reads it):
`ByteLevelJsonTokenizer` (ModernBERT's byte-level BPE: NFC, GPT-2's split, BPE over byte
symbols; a `BytePairTokenizer` with a normaliser and added tokens) and `ByteFallbackTokenizer`
(mmBERT's: spaces to "▁", the text one word, BPE over characters, a character the vocabulary
lacks as its UTF-8 bytes' <0xNN> tokens).

Both tokenize as the `tokenizers` package does: the added tokens found first
(`added_tokens.AddedTokens`), the normaliser on the text between them, each piece tokenized
alone. A token's characters (`word_offsets`) are those its normalised characters come from
(`normalizers`): the characters whose bytes it holds, less the spaces of its leading and
trailing "Ġ" where a ByteLevel post-processor trims them.
"""

import functools

import numpy as np
import tensorflow as tf

from kbert.tokenizers.base import Tokenizer, by_rows
from kbert.tokenizers.bpe.merge import MergeTable
from kbert.tokenizers.bpe.tokenizer import BytePairTokenizer
from kbert.tokenizers.offsets import trimmed
from kbert.tokenizers.tokenizer_json.added_tokens import AddedTokens
from kbert.tokenizers.tokenizer_json.normalizers import MARK, graph_normalize, normalize
from kbert.tokenizers.words import read_bytes

_BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]


class JsonTokenizer:
    """What both tokenizers of a tokenizer.json share: the added tokens, the normaliser, the
    template's layout, and offsets. Subclasses give `_normalized_ids(strings)` (normalised
    text without added tokens -> ragged ids), `token_sizes` (each token's UTF-8 bytes in the
    normalised text), `gpt2_pieces` (whether GPT-2's pieces are the words) and, with it,
    `_pieces(texts)` (normalised texts -> [(piece, start)] each)."""

    def _read_spec(self, spec, split_special_tokens, pair_layout):
        self.tokenizer_json = spec.text
        self.normalizer, self.prepend = spec.normalizer, spec.prepend
        self.trim_offsets = spec.trim_offsets
        self.layout = spec.layout  # the template's, unless given
        self._given_layout(pair_layout)
        # (kept out of tf.Module's attribute tracking, which would wrap its dicts)
        self.__dict__["_added_spec"] = spec.added
        self._split_special_tokens = bool(split_special_tokens)
        self.added = AddedTokens(spec.added, spec.normalizer, spec.prepend,
                                 self._split_special_tokens)
        index = {token: i for i, token in enumerate(spec.vocabulary)}
        for key, literal in spec.specials.items():
            setattr(self, f"{key}_id", index[literal])
        self.special_tokens = [spec.specials[k] for k in ("cls", "pad", "sep", "unk", "mask")]
        self.special_ids = sorted({index[t] for t in self.special_tokens}
                                  | {a["id"] for a in spec.added if a["special"]})
        self.left_stripped = tuple(a["content"] for a in spec.added if a["lstrip"])

    @property
    def split_special_tokens(self):
        """True: a special added token's literal typed in the text is text; False: it is
        its token. It may be assigned after construction, as every kbert tokenizer's."""
        return self._split_special_tokens

    @split_special_tokens.setter
    def split_special_tokens(self, value):
        # Every path finds the added tokens through `added` (`tokenize`, `graph_encode`,
        # `tokenize_with_offsets`), which holds the special ones only where they are kept
        # whole: it is rebuilt from the flag, or an assignment would change nothing.
        self._split_special_tokens = bool(value)
        added = self.__dict__.get("_added_spec")
        if added is not None:  # (None while BytePairTokenizer.__init__ sets the flag)
            self.added = AddedTokens(added, self.normalizer, self.prepend,
                                     self._split_special_tokens)

    def _tokenize_normalized(self, text):
        return by_rows(self._ids, text)

    def tokenize_keeping_special_tokens(self, text):
        """Valid UTF-8 strings [N] -> ids ragged [N, (tokens)], as the `tokenizers` package's
        `encode(text, add_special_tokens=False)`: the added tokens its `split_special_tokens`
        keeps whole are found, whatever it is asked here (they are the tokenizer's own)."""
        return self._ids(text)

    def _ids(self, text):
        raw, raw_ids = self.added.graph_split(text, "raw")  # [N, (parts)]
        normalized, _ = graph_normalize(tf.where(raw_ids >= 0, "", raw.flat_values),
                                        self.normalizer, self.prepend)
        parts, part_ids = self.added.graph_split(normalized, "normalized")
        ids = self._normalized_ids(tf.where(part_ids >= 0, "", parts.flat_values))
        ids = parts.with_flat_values(_with_tokens(ids, part_ids)).merge_dims(1, 2)
        return raw.with_flat_values(_with_tokens(ids, raw_ids)).merge_dims(1, 2)

    # === Tokens with their characters (`kbert.tokenizers.encoding.Encoder`) ===

    def _segments(self, text):
        """[(start, end, id)] of the added tokens of `text` and [(normalised text, origin)] of
        the text between them (origin: each normalised character's index in `text`), in
        order: id None for text."""
        out = []
        for start, end, token in self.added.python_split(text, "raw"):
            if token is not None:
                out.append(((start, end, token), None))
                continue
            normalized, origin = normalize(text[start:end], self.normalizer, self.prepend)
            origin = [o + start for o in origin]
            for a, b, token in self.added.python_split(normalized, "normalized"):
                ends = origin[b] if b < len(origin) else end
                if token is not None:
                    out.append(((origin[a], ends, token), None))
                else:
                    out.append(((origin[a], ends, None), (normalized[a:b], origin[a:b])))
        return out

    def offset_words(self, texts):
        """Per text, [(word, start)]: each added token, and the pre-tokenizer's pieces of the
        text between them (a byte-level BPE: GPT-2's; a byte-fallback one: the whole text)."""
        if not self.gpt2_pieces:  # the text between raw added tokens is one word
            return [[(text[a:b], a) for a, b, _ in self.added.python_split(text, "raw")]
                    for text in texts]
        segments = [self._segments(text) for text in texts]
        pieces = iter(self._pieces([n[0] for s in segments for _, n in s if n is not None]))
        result = []
        for text, segment in zip(texts, segments):
            words = []
            for (start, end, token), normal in segment:
                if normal is None:
                    words.append((text[start:end], start))
                    continue
                origin, joined, first = normal[1] + [end], "", None
                for piece, a in next(pieces):
                    first = origin[a] if first is None else first
                    last, joined = origin[a + len(piece)], joined + piece
                    # Pieces whose characters NFC took apart (reordered marks) go together.
                    if normalize(text[first:last], self.normalizer)[0] == joined or last == end:
                        words.append((text[first:last], first))
                        joined, first = "", None
            result.append(words)
        return result

    def word_offsets(self, word, ids, start, text):
        """int32 [tokens, 2]: the characters in `text` of the tokens `ids` of `word` (which
        starts at `start`): those their normalised bytes come from."""
        spans, ids = [], [int(i) for i in ids]
        position = 0
        for (first, last, token), normal in self._segments(word):
            if normal is None:
                spans.append((first, last))
                position += 1
                continue
            normalized, origin = normal
            owner = [k for k, char in enumerate(normalized) for _ in read_bytes(char)]
            byte = 0
            while byte < len(owner) and position < len(ids):
                size = self.token_sizes[ids[position]]
                a, b = owner[byte], owner[min(byte + size, len(owner)) - 1] + 1
                a, b = self._trimmed(ids[position], a, b)
                spans.append((origin[a] if a < len(origin) else last,
                              origin[b - 1] + 1 if b > a else
                              (origin[a] if a < len(origin) else last)))
                byte += size
                position += 1
        return np.array(spans, np.int32).reshape(-1, 2) + start

    def _trimmed(self, token_id, a, b):
        if not self.trim_offsets:
            return a, b
        return trimmed(self.vocabulary[token_id], a, b)

    def graph_encode(self, text, specials):
        """`kbert.tokenizers.tokenizer_json.graph.encode`."""
        from kbert.tokenizers.tokenizer_json import graph

        return graph.encode(text, self, specials)

    # === Files ===

    def json_files(self):
        """(the tokenizer.json's text, the tokenizer_config.json fields naming its specials):
        what `kbert.tokenizers.tokenizer_from_json` reads it back from."""
        return self.tokenizer_json, {
            f"{key}_token": self.vocabulary[getattr(self, f"{key}_id")]
            for key in ("cls", "sep", "pad", "mask", "unk")}

    def write_files(self, directory):
        """tokenizer.json as it was read, and a tokenizer_config.json naming the specials."""
        import os

        from kbert.tokenizers.files import write_settings

        text, settings = self.json_files()
        tf.io.gfile.makedirs(directory)
        with tf.io.gfile.GFile(os.path.join(directory, "tokenizer.json"), "w") as f:
            f.write(text)
        write_settings(settings, directory)

    def identity(self):
        return (tuple(self.vocabulary), tuple(tuple(m) for m in self.merges),
                self.normalizer, self.prepend)


def _with_tokens(ids, part_ids):
    """Ragged ids [parts, (tokens)] with each added-token part's id as its one token."""
    is_token = part_ids >= 0
    tokens = tf.RaggedTensor.from_row_lengths(tf.boolean_mask(part_ids, is_token),
                                              tf.cast(is_token, tf.int64))
    return tf.concat([tf.cast(ids, tf.int32), tokens], axis=1)


class ByteLevelJsonTokenizer(JsonTokenizer, BytePairTokenizer):
    """A tokenizer.json's byte-level BPE (ModernBERT's): `load_tokenizer_json` makes it."""

    gpt2_pieces = True  # its words: GPT-2's pieces

    def __init__(self, spec, split_special_tokens=True, name=None, pair_layout=None):
        specials = {key: spec.specials[key] for key in ("cls", "pad", "sep", "unk", "mask")}
        BytePairTokenizer.__init__(self, spec.vocabulary, spec.merges,
                                   special_tokens=specials, name=name)
        self._read_spec(spec, split_special_tokens, pair_layout)

    @functools.cached_property
    def token_sizes(self):
        return [len(b) for b in self.token_bytes]

    def _normalized_ids(self, strings):
        return BytePairTokenizer._tokenize_normalized(self, strings)

    def _pieces(self, texts):
        from kbert.tokenizers.words import byte_pair_words

        return byte_pair_words(texts)

    def tflite_tokenizer(self):
        return Tokenizer.tflite_tokenizer(self)


class ByteFallbackTokenizer(JsonTokenizer, Tokenizer):
    """A tokenizer.json's byte-fallback BPE (mmBERT's, Gemma's): `load_tokenizer_json` makes
    it. The normalised text (spaces as "▁") is one word; its characters are the symbols, a
    character the BPE's vocabulary lacks its UTF-8 bytes' <0xNN> tokens; BPE merges them."""

    tokenizer_type = "bpe"
    bert_words = False
    gpt2_pieces = False  # its word: the text between raw added tokens

    def __init__(self, spec, split_special_tokens=True, name=None, pair_layout=None):
        super().__init__(name=name)
        self.vocabulary = list(spec.vocabulary)
        self.merges = list(spec.merges)
        self._index = {token: i for i, token in enumerate(self.vocabulary)}
        self._read_spec(spec, split_special_tokens, pair_layout)
        model = sorted(spec.model_tokens)
        self._symbols = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(model), tf.constant([self._index[t] for t in model], tf.int64)), -1)
        self._tokens = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(self.vocabulary), tf.range(len(self.vocabulary), dtype=tf.int64)),
            self.unk_id)
        self._byte_ids = tf.constant([self._index[t] for t in _BYTE_TOKENS], tf.int64)
        self._merges = MergeTable(self._index, self.merges, len(self.vocabulary))
        self._token_bytes = tf.constant(self.token_bytes)

    @functools.cached_property
    def token_bytes(self):
        """Each token's bytes: <0xNN> its byte, "▁" a space; an added token its literal."""
        byte = {t: bytes([b]) for b, t in enumerate(_BYTE_TOKENS)}
        return [byte.get(t) or t.replace(MARK, " ").encode("utf-8") for t in self.vocabulary]

    @functools.cached_property
    def token_sizes(self):
        return [1 if t in _BYTE_TOKENS else len(t.encode("utf-8")) for t in self.vocabulary]

    def _normalized_ids(self, strings):
        chars = tf.strings.unicode_split(strings, "UTF-8")  # [P, (chars)]
        found = self._symbols.lookup(chars.flat_values)
        known = found >= 0
        data = tf.strings.bytes_split(chars.flat_values)  # [C, (bytes)]
        byte_ids = tf.gather(self._byte_ids, tf.cast(tf.reshape(
            tf.io.decode_raw(data.flat_values, tf.uint8), [-1]), tf.int64))
        byte_rows = tf.ragged.boolean_mask(data.with_flat_values(byte_ids), data.with_flat_values(
            tf.repeat(~known, data.row_lengths())))
        symbols = tf.concat([tf.RaggedTensor.from_row_lengths(
            tf.boolean_mask(found, known), tf.cast(known, tf.int64)), byte_rows], axis=1)
        symbols = chars.with_flat_values(symbols).merge_dims(1, 2)  # [P, (symbols)]
        ids, lengths = self._merges.merge(symbols.flat_values, symbols.row_lengths())
        return tf.RaggedTensor.from_row_lengths(tf.cast(ids, tf.int32), lengths)

    def checkpoint_assets(self):
        return list(self.vocabulary), False, None, list(self.merges)

    def starts_word(self, token):
        """A token starts a word when it starts with "▁" (a space before it)."""
        return token.startswith(MARK)

    def detokenize(self, ids):
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
        text = tf.strings.reduce_join(tf.gather(self._token_bytes, ids), axis=-1)
        return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace")

    def _decode(self, ids):
        text = b"".join(self.token_bytes[i] for i in ids).decode("utf-8", errors="replace")
        return text[1:] if self.prepend and text.startswith(" ") else text

    def tokens_to_string(self, tokens):
        return self._decode([self._index.get(t, self.unk_id) for t in tokens])

    def graph_decode(self, token_ids):
        text = self.detokenize(token_ids)
        return tf.strings.regex_replace(text, "^ ", "") if self.prepend else text

    def graph_tokens_to_string(self, tokens):
        return self.graph_decode(tf.cast(self._tokens.lookup(tokens), tf.int32))


def tokenizer_of(spec, split_special_tokens=True, pair_layout=None):
    """The kbert tokenizer of a `tokenizer_json.TokenizerJson`; `pair_layout`: None keeps
    the template's."""
    kind = ByteLevelJsonTokenizer if spec.kind == "byte_level" else ByteFallbackTokenizer
    return kind(spec, split_special_tokens, pair_layout=pair_layout)
