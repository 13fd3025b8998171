"""WordPiece tokenizer on tensorflow-text, usable in tf.data and in SavedModel graphs."""

import os

import tensorflow as tf
import tensorflow_text as tf_text

from kbert.tokenizers.base import PieceTokenizer
from kbert.tokenizers.normalization import (
    character_ranges,
    clean_text,
    lower,
    re2_class,
    strip_accents,
)

SPECIAL_TOKENS = {
    "pad": "[PAD]",
    "unk": "[UNK]",
    "cls": "[CLS]",
    "sep": "[SEP]",
    "mask": "[MASK]",
}
# BERT's `_is_chinese_char`: the CJK ideographs, each of which is a word of its own.
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def normalize(text, lowercase=True, alphabet=None):
    """BERT's normalisation in the graph: clean the text, then for uncased models lower-case,
    NFD and drop the nonspacing marks (Mn), for cased ones compose (NFC).

    This is what google-research/bert's tokenization.py and Hugging Face's BertTokenizer do.
    tensorflow-text's own `lower_case_nfd_strip_accents` case-folds with NFKC instead, which
    also rewrites compatibility characters ("™" -> "tm", "ﬁ" -> "fi", full-width letters),
    and so gives other ids than the pretrained checkpoints' tokenizers for them.
    `alphabet`: the vocabulary's characters, if known (see `normalization.lower`).
    """
    text = clean_text(tf.convert_to_tensor(text, tf.string))
    if lowercase:
        return strip_accents(lower(text, alphabet, nul_free=True))
    # transformers' BasicTokenizer composes (NFC) after cleaning, so that a decomposed "é"
    # finds the cased vocabulary's "é" (uncased: NFD follows, and NFC changes nothing).
    return tf_text.normalize_utf8(text, "NFC")


def read_vocabulary(path):
    """Reads a vocab.txt (one token per line, the line number is the id)."""
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Vocabulary file {path!r} does not exist.")
    with tf.io.gfile.GFile(path, "r") as f:
        tokens = [line.rstrip("\r\n") for line in f]
    while tokens and not tokens[-1]:
        tokens.pop()  # a trailing newline is not a token
    return tokens


class WordPieceTokenizer(PieceTokenizer):
    """BERT's tokenization: text -> basic split -> WordPiece ids, in the TensorFlow graph.

    Built on `tensorflow_text.FastBertTokenizer`, whose WordPiece model is a constant inside
    the graph: the tokenizer works inside `tf.data.Dataset.map`, a `tf.function` and a
    SavedModel with no Python and no files at run time.

    Args:
        vocabulary: path of a vocab.txt, or a list of tokens (index = id).
        lowercase: lower-case, NFD-normalise and strip accents first (uncased models).
        max_chars_per_word: longer words (in characters, after normalisation) become one
            [UNK], as BERT's `max_input_chars_per_word`.
        split_special_tokens: True (the default, as google-research/bert's tokenization.py):
            a special-token literal typed in the text ("[SEP]", "[MASK]") is split like any
            text ("[", "sep", "]"), so that text cannot forge the model's structure. False:
            each literal gives its token's id, as transformers' tokenizers do by default.
        pair_layout: how a pair is packed (`kbert.tokenizers.packing.PairLayout`, a
            (separators, second_segment) pair or "bert" / "roberta"); BERT's by default.

    Attributes:
        pad_id, unk_id, cls_id, sep_id, mask_id: the special-token ids, read from the vocab.
        vocabulary_size: number of tokens.
    """

    def __init__(self, vocabulary, lowercase=True, max_chars_per_word=100,
                 split_special_tokens=True, name=None, pair_layout=None):
        super().__init__(name=name)
        self._given_layout(pair_layout)
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary = read_vocabulary(os.fspath(vocabulary))
        vocabulary = list(vocabulary)
        if isinstance(max_chars_per_word, bool) or not isinstance(max_chars_per_word, int) or \
                not 1 <= max_chars_per_word <= 999:  # RE2 repeats 1000 times at most
            raise ValueError(
                f"max_chars_per_word must be an integer in [1, 999], got {max_chars_per_word!r}.")
        if len(set(vocabulary)) != len(vocabulary):
            seen, duplicates = set(), []
            for token in vocabulary:
                if token in seen:
                    duplicates.append(token)
                seen.add(token)
            raise ValueError(f"The vocabulary repeats tokens: {duplicates[:10]}.")
        index = {token: i for i, token in enumerate(vocabulary)}
        missing = [tok for tok in SPECIAL_TOKENS.values() if tok not in index]
        if missing:
            raise ValueError(
                f"The vocabulary lacks the special tokens {missing}; BERT needs "
                f"{list(SPECIAL_TOKENS.values())}."
            )
        self.vocabulary = vocabulary
        self.lowercase = bool(lowercase)
        self.split_special_tokens = bool(split_special_tokens)
        self.special_tokens = list(SPECIAL_TOKENS.values())
        for key, token in SPECIAL_TOKENS.items():
            setattr(self, f"{key}_id", index[token])
        self.special_ids = sorted(index[tok] for tok in SPECIAL_TOKENS.values())
        self._index = index
        self.max_chars_per_word = max_chars_per_word
        self._alphabet = "".join(sorted(set("".join(vocabulary))))
        self._tokenizer = tf_text.FastBertTokenizer(
            vocab=vocabulary,
            token_out_type=tf.int32,
            unknown_token=SPECIAL_TOKENS["unk"],
            max_bytes_per_word=4 * max_chars_per_word,  # see _normalize
            lower_case_nfd_strip_accents=False,  # `normalize` does it, as BERT did
            support_detokenization=True,
        )

    tokenizer_type = "wordpiece"
    tflite_offsets = True
    continuation_prefix = "##"

    def whole_text_risks(self):
        """`Tokenizer.whole_text_risks`: BERT's words are where FastBertTokenizer splits too,
        and the long-word rule cuts the same words; two rules look across a word's edge.
        Lower-casing gives a capital sigma its final form by the letters around it, through
        case-ignorable punctuation ("ΟΔΟΣ.Α": "σ" whole, "ς" as the word "ΟΔΟΣ"); a cased
        model's NFC composes "<", "=", ">" with a following U+0338 into "≮", "≠", "≯" (a word
        of its own for BERT's split). Subclasses (tokenizer.json kinds) are not checked."""
        if type(self) is not WordPieceTokenizer:
            return None
        return ("\u03a3",) if self.lowercase else ("\u0338",)

    def write_files(self, directory):
        from kbert.tokenizers.files import write_vocabulary

        write_vocabulary(self.vocabulary, os.path.join(directory, "vocab.txt"))

    def tflite_tokenizer(self):
        """tensorflow-text's `FastBertTokenizer` on the same vocabulary (see
        `kbert.serving.runtimes.tflite_tokenizer` for where the two differ)."""
        return tf_text.FastBertTokenizer(
            vocab=self.vocabulary,
            token_out_type=tf.int32,
            unknown_token=self.vocabulary[self.unk_id],
            # kbert's limit is in characters, FastBertTokenizer's in bytes: equal for ASCII;
            # a longer word of multi-byte characters can become [UNK] earlier here.
            max_bytes_per_word=self.max_chars_per_word,
            lower_case_nfd_strip_accents=self.lowercase,
        )

    def offset_words(self, texts):
        """BERT's basic split (`kbert.tokenizers.words.split_words`): whitespace separates,
        each punctuation and CJK character is a word, where BERT's tokenizer splits too."""
        from kbert.tokenizers.words import split_words

        return [[(w.text, w.start) for w in split_words(text)] for text in texts]

    def graph_encode(self, text, specials):
        """`kbert.tokenizers.wordpiece.graph.encode`: BERT's words, each tokenized alone."""
        from kbert.tokenizers.wordpiece import graph

        return graph.encode(text, self, specials)

    def _decode(self, ids):
        from kbert.tokenizers import decoding

        return decoding.replace_all(super()._decode(ids), decoding.CLEAN_UP)

    def starts_word(self, token):
        """A WordPiece continues the word before it when it starts with "##"."""
        return not token.startswith("##")

    def is_placeholder(self, token):
        """Bracketed tokens ("[unused0]", "[PAD]") are placeholders of BERT's vocabularies:
        the basic tokenizer splits every "[" and "]" off, so text never gives them."""
        return token.startswith("[") and token.endswith("]")

    def _normalize(self, text):
        text = normalize(text, self.lowercase, self._alphabet)
        # BERT makes a word of more than max_chars_per_word characters one [UNK], where
        # FastBertTokenizer counts bytes: its limit lets through every word up to 4 bytes a
        # character, and a longer word is replaced by one over it, which gives one [UNK].
        # The exact split into words is only made where a loose test (a run of that many
        # characters between ASCII breaks) finds text that may need it: it costs more.
        ascii_breaks = r"\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f"
        maybe_long = tf.strings.regex_full_match(
            text, rf"(?s).*[^{ascii_breaks}]{{{self.max_chars_per_word + 1}}}.*")
        return tf.cond(tf.reduce_any(maybe_long), lambda: self._replace_long_words(text),
                       lambda: text)

    def _replace_long_words(self, text):
        """BERT's words (whitespace separates; each punctuation and CJK character is a word),
        one space between two, and each word longer than `max_chars_per_word` replaced by
        one over FastBertTokenizer's byte limit (one [UNK]).

        Four regex replacements (the same strings as tensorflow-text's `regex_split` on these
        classes joined by spaces): a dataset's map function builds its kernels afresh for
        every dataset, and `regex_split` with its ragged ops cost about 0.6 s there."""
        spaces = re2_class(character_ranges("whitespace"))
        splits = re2_class(character_ranges("punctuation") + CJK_RANGES)  # words of their own
        text = tf.strings.regex_replace(text, f"({splits})", r" \1 ")
        text = tf.strings.regex_replace(text, spaces + "+", " ")
        text = tf.strings.regex_replace(text, "^ | $", "")
        return tf.strings.regex_replace(text, f"[^ ]{{{self.max_chars_per_word + 1},}}",
                                        "a" * (4 * self.max_chars_per_word + 1))
