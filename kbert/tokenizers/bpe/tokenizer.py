"""GPT-2 / RoBERTa byte-level BPE (vocab.json + merges.txt) in the TensorFlow graph.

The reference is Hugging Face's `tokenizers` (`ByteLevel` pre-tokenizer + `BPE` model), which
RoBERTa's released tokenizer is. Three steps, each a few TensorFlow ops, so that the tokenizer
runs inside `tf.data` and a SavedModel with no Python:

1. GPT-2's split, `'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`.
   RE2 has no look-ahead, so whitespace runs are cut first: a run followed by text keeps all
   but its last character, which goes with the text when it is a plain space and stands alone
   otherwise; the text between runs is then split by the rest of the pattern.
2. Each piece's UTF-8 bytes become GPT-2's byte symbols (`bytes_to_unicode`), as ids.
3. BPE (`kbert.tokenizers.bpe.merge`): in every word, all non-overlapping occurrences of the
   pair of lowest merge rank are merged, left to right, until no pair has a rank.

keras-hub's `BytePairTokenizer` is not the core: its RE2 split marks word starts with "६"
(which then vanishes from the text), and it has no look-ahead rule for tabs and newlines.
"""

import functools
import json
import os

import tensorflow as tf

from kbert.tokenizers import packing
from kbert.tokenizers.base import Tokenizer, by_rows
from kbert.tokenizers.bpe.merge import MergeTable
from kbert.tokenizers.byte_level import SPACE, WORD_START, bytes_to_unicode, pre_tokenize
from kbert.tokenizers.normalization import lower

# RoBERTa's special tokens (fairseq's dictionary order: <s>=0, <pad>=1, </s>=2, <unk>=3; <mask>
# is the last id). The keys are those of WordPieceTokenizer.
SPECIAL_TOKENS = {
    "cls": "<s>",
    "pad": "<pad>",
    "sep": "</s>",
    "unk": "<unk>",
    "mask": "<mask>",
}
def read_vocabulary(path):
    """A vocab.json: {token: id} -> the token list (index = id)."""
    with tf.io.gfile.GFile(os.fspath(path), "r") as f:
        return _vocabulary_list(json.load(f), str(path))


def read_merges(path):
    """A merges.txt: one "left right" pair a line, after an optional "#version" line."""
    with tf.io.gfile.GFile(os.fspath(path), "r") as f:
        lines = f.read().split("\n")
    return merge_pairs(lines, str(path))


def _vocabulary_list(vocabulary, source):
    if isinstance(vocabulary, dict):
        ids = sorted(vocabulary.values())
        if ids != list(range(len(ids))):
            raise ValueError(f"{source}: the ids are not 0..{len(ids) - 1} without gaps.")
        tokens = [None] * len(ids)
        for token, i in vocabulary.items():
            tokens[i] = token
        return tokens
    tokens = list(vocabulary)
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"{source}: the vocabulary repeats tokens.")
    return tokens


def merge_pairs(merges, source="merges"):
    """Merges as "left right" strings (a merges.txt's lines) or pairs -> a list of pairs."""
    pairs = []
    for number, merge in enumerate(merges):
        where = f"merge {number} {merge!r}"
        if isinstance(merge, str):
            if not merge or (number == 0 and merge.startswith("#version")):
                continue
            where = f"line {number + 1} {merge!r}"
            merge = merge.split(" ")
        if len(merge) != 2:
            raise ValueError(f"{source}: {where} is not a pair of tokens (two tokens "
                             "separated by one space).")
        pairs.append(tuple(merge))
    return pairs


class BytePairTokenizer(Tokenizer):
    """GPT-2 / RoBERTa byte-level BPE: text -> GPT-2's split -> bytes -> BPE ids, in the graph.

    Gives the ids of Hugging Face's `tokenizers` (`ByteLevelBPETokenizer`, RoBERTa's
    `tokenizer.json`) for the same vocab.json and merges.txt. It has `WordPieceTokenizer`'s
    interface: `tokenize`, `detokenize`, `vocabulary`, `token_to_id`, `id_to_token` and the
    special ids (`cls_id` is `<s>`, `sep_id` `</s>`).

    Args:
        vocabulary: path of a vocab.json, a {token: id} dict, or a token list (index = id).
        merges: path of a merges.txt, or a list of "left right" strings or pairs, in rank order.
        add_prefix_space: put a space before text that does not start with one (nor is empty),
            so that the first word is tokenized as any other ("Ġhello"); RoBERTa's tokenizer
            does not.
        split_special_tokens: True (the default): "<mask>" typed in the text is split like
            any text; False: each special token's literal gives its id (transformers' default).
        special_tokens: {key: literal} for the keys cls, pad, sep, unk, mask; RoBERTa's by
            default.
        lstrip_mask: with `split_special_tokens=False`, the mask literal takes the whitespace
            before it along ("a <mask>" is "a", "<mask>"), as RoBERTa's tokenizer does.
        lowercase: lower-case the text first (Python's `str.lower`), as `tokenizers`'
            `ByteLevelBPETokenizer(lowercase=True)`; RoBERTa's tokenizer is cased (False).
        pair_layout: how a pair is packed (`kbert.tokenizers.packing.PairLayout`, a
            (separators, second_segment) pair or "bert" / "roberta"); RoBERTa's by default.

    Attributes:
        cls_id, pad_id, sep_id, unk_id, mask_id: the special ids, read from the vocabulary.
        vocabulary: the tokens (index = id); merges: the merge pairs in rank order.
    """

    left_strip_class = SPACE
    layout = packing.ROBERTA  # RoBERTa's pairs: <s> a </s></s> b </s>, all of it segment 0
    tokenizer_type = "bpe"
    bert_words = False  # its words are GPT-2's pieces

    def __init__(self, vocabulary, merges, add_prefix_space=False, split_special_tokens=True,
                 special_tokens=None, lstrip_mask=True, lowercase=False, name=None,
                 pair_layout=None):
        super().__init__(name=name)
        self._given_layout(pair_layout)
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary = read_vocabulary(vocabulary)
        else:
            vocabulary = _vocabulary_list(vocabulary, "vocabulary")
        if isinstance(merges, (str, os.PathLike)):
            merges = read_merges(merges)
        else:
            merges = merge_pairs(merges, "merges")
        special_tokens = dict(SPECIAL_TOKENS if special_tokens is None else special_tokens)
        if sorted(special_tokens) != sorted(SPECIAL_TOKENS):
            raise ValueError(f"special_tokens must have the keys {sorted(SPECIAL_TOKENS)}, "
                             f"got {sorted(special_tokens)}.")
        index = {token: i for i, token in enumerate(vocabulary)}
        missing = [token for token in special_tokens.values() if token not in index]
        if missing:
            raise ValueError(f"The vocabulary lacks the special tokens {missing}.")
        self.vocabulary = vocabulary
        self.merges = merges
        self.add_prefix_space = bool(add_prefix_space)
        self.lowercase = bool(lowercase)
        self.split_special_tokens = bool(split_special_tokens)
        self.special_tokens = list(special_tokens.values())
        self.lstrip_mask = bool(lstrip_mask)
        self.left_stripped = (special_tokens["mask"],) if lstrip_mask else ()
        for key, token in special_tokens.items():
            setattr(self, f"{key}_id", index[token])
        self.special_ids = sorted(index[token] for token in special_tokens.values())
        self._index = index

        size = len(vocabulary)
        # Byte -> the id of its symbol (unknown id when the vocabulary lacks it).
        self._byte_ids = tf.constant(
            [index.get(symbol, self.unk_id) for symbol in bytes_to_unicode()], tf.int64)
        self._merges = MergeTable(index, merges, size)
        self._symbol_bytes = tf.constant(self._token_bytes(vocabulary))

    def whole_text_risks(self):
        """`Tokenizer.whole_text_risks`: GPT-2's pieces are where the whole text is split,
        with the same prefix space. A lower-casing one is not: its contractions are matched
        after lower-casing in a whole text ("IT'S": "'s") but before it word by word ("'",
        "s"). Subclasses are not checked."""
        if type(self) is not BytePairTokenizer or self.lowercase:
            return None
        return ()

    @staticmethod
    def _token_bytes(vocabulary):
        """Each token's bytes (its symbols mapped back); special tokens are their literal."""
        to_byte = {symbol: bytes([byte]) for byte, symbol in enumerate(bytes_to_unicode())}
        return [b"".join(to_byte[c] for c in token) if all(c in to_byte for c in token)
                else token.encode("utf-8") for token in vocabulary]

    def write_files(self, directory):
        """vocab.json and merges.txt; without `add_prefix_space` (RoBERTa's checkpoints'
        setting) also a tokenizer_config.json that says so, as theirs do: a folder that does
        not say is read with kbert's pretraining setting (`tokenizer_types`)."""
        from kbert.tokenizers.files import write_byte_pair_files, write_settings

        write_byte_pair_files(self.vocabulary, self.merges, directory)
        if not self.add_prefix_space:
            write_settings({"add_prefix_space": False}, directory)

    def identity(self):
        return (tuple(self.vocabulary), tuple(tuple(m) for m in self.merges))

    def checkpoint_assets(self):
        return list(self.vocabulary), False, None, list(self.merges)

    def tflite_tokenizer(self):
        raise ValueError(
            "A BytePairTokenizer (RoBERTa) cannot go inside a TFLite model: its byte-level "
            "pre-tokenization (a regex split and the byte-to-unicode map) has no TFLite "
            "kernel. Export token ids in (kbert.serving.export_tflite) and tokenize on the "
            "host.")

    @functools.cached_property
    def token_bytes(self):
        """The tokens as bytes (index = id; special tokens: their literal)."""
        return self._token_bytes(self.vocabulary)

    def offset_words(self, texts):
        """GPT-2's pieces (`pre_tokenize`, the tokenizer's own split, " word" with its
        space), which BPE merges one by one."""
        from kbert.tokenizers.words import byte_pair_words

        return byte_pair_words(list(texts))

    def align_texts(self, texts):
        """`kbert.tokenizers.alignment.byte_pair_texts`: GPT-2's pieces are the words."""
        from kbert.tokenizers import alignment

        return alignment.byte_pair_texts(texts, self)

    def align_words(self, word_lists):
        """`kbert.tokenizers.alignment.byte_pair_word_lists`: " word" each."""
        from kbert.tokenizers import alignment

        return alignment.byte_pair_word_lists(word_lists, self)

    def word_offsets(self, word, ids, start, text):
        """`kbert.tokenizers.offsets.byte_pair_offsets`: a token covers the characters its
        bytes came from (transformers' ByteLevel offsets with trim_offsets=True)."""
        from kbert.tokenizers.offsets import byte_pair_offsets

        return byte_pair_offsets(word, [self.vocabulary[i] for i in ids],
                                 [self.token_bytes[i] for i in ids], start, self.lowercase)

    def graph_encode(self, text, specials):
        """`kbert.tokenizers.bpe.graph.encode`."""
        from kbert.tokenizers.bpe import graph

        return graph.encode(text, self, specials)

    def tokens_to_string(self, tokens):
        from kbert.tokenizers import decoding

        return decoding.byte_level_string(tokens)

    def _decode(self, ids):
        return b"".join(self.token_bytes[i] for i in ids).decode("utf-8", errors="replace")

    def graph_tokens_to_string(self, tokens):
        from kbert.tokenizers import decoding

        return decoding.graph_byte_level_string(tokens)

    def graph_decode(self, token_ids):
        from kbert.tokenizers import decoding

        return decoding.graph_bytes_decode(tf.constant(self.token_bytes), token_ids)

    def starts_word(self, token):
        """A token starts a word when it starts with "Ġ" (GPT-2's symbol of the space byte:
        the split puts a word's space before it); any other token continues the word before
        it. The first word of a text has no space before it unless `add_prefix_space` puts
        one there (as SentencePiece puts its "▁" before every text): a pipeline that packs
        texts into one sequence and masks whole words tokenizes with `add_prefix_space=True`,
        or a text's first word counts as part of the word before it."""
        return token.startswith(WORD_START)

    def tokenize_pieces(self, pieces):
        """`tokenize` without the space `add_prefix_space` puts before a text: GPT-2's pieces
        carry their own (" word"), and a piece that has none ("." after a word) continues the
        word before it. A text's first piece gets the space from `words.offset_words`."""
        if not self.add_prefix_space:
            return self.tokenize(pieces)
        text = tf.strings.unicode_transcode(tf.convert_to_tensor(pieces, tf.string),
                                            "UTF-8", "UTF-8", errors="replace")
        return self._tokenize_normalized(text, prefix_space=False)

    def _normalize(self, text, prefix_space=True):
        if self.lowercase:
            text = lower(text)
        if self.add_prefix_space and prefix_space:
            # `tokenizers` leaves empty text empty.
            text = tf.where(tf.strings.regex_full_match(text, "(?s)( .*)?"), text,
                            tf.strings.join([" ", text]))
        return text

    def _tokenize_normalized(self, text, prefix_space=True):
        if text.shape.rank != 1:  # [..., (ids)] from the strings in one row
            return by_rows(lambda t: self._tokenize_normalized(t, prefix_space), text)
        words = pre_tokenize(self._normalize(text, prefix_space))  # [N, (words)]
        symbols = tf.strings.bytes_split(words.flat_values)  # [words, (bytes)]
        byte_values = tf.reshape(tf.io.decode_raw(symbols.flat_values, tf.uint8), [-1])
        ids = tf.gather(self._byte_ids, tf.cast(byte_values, tf.int64))
        ids, lengths = self._merges.merge(ids, symbols.row_lengths())
        words_ids = tf.RaggedTensor.from_row_lengths(ids, lengths)
        return tf.cast(words.with_flat_values(words_ids).merge_dims(1, 2), tf.int32)

    def detokenize(self, ids):
        """Ids [..., (tokens)] (ragged or dense) -> strings [...]: the tokens' bytes joined,
        invalid UTF-8 (a cut multi-byte character) replaced by U+FFFD."""
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
        pieces = tf.gather(self._symbol_bytes, ids)
        text = tf.strings.reduce_join(pieces, axis=-1)
        return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace")
