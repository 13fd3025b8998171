"""WordPiece tokenizer on tensorflow-text, usable in tf.data and in SavedModel graphs."""

import os

import tensorflow as tf
import tensorflow_text as tf_text

from kbert.tokenizers._tokenizer import Tokenizer

SPECIAL_TOKENS = {
    "pad": "[PAD]",
    "unk": "[UNK]",
    "cls": "[CLS]",
    "sep": "[SEP]",
    "mask": "[MASK]",
}


def normalize(text, lowercase=True):
    """BERT's uncased normalisation in the graph: lower-case, NFD, drop combining marks (Mn).

    This is what google-research/bert's tokenization.py and Hugging Face's BertTokenizer do.
    tensorflow-text's own `lower_case_nfd_strip_accents` case-folds with NFKC instead, which
    also rewrites compatibility characters ("™" -> "tm", "ﬁ" -> "fi", full-width letters),
    and so gives other ids than the pretrained checkpoints' tokenizers for them.
    """
    text = tf.convert_to_tensor(text, tf.string)
    if not lowercase:
        return text
    text = tf.strings.lower(text, encoding="utf-8")
    text = tf_text.normalize_utf8(text, "NFD")
    return tf.strings.regex_replace(text, r"\p{Mn}", "")


def read_vocabulary(path):
    """Reads a vocab.txt (one token per line, the line number is the id)."""
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Vocabulary file {path!r} does not exist.")
    with tf.io.gfile.GFile(path, "r") as f:
        tokens = [line.rstrip("\r\n") for line in f]
    while tokens and not tokens[-1]:
        tokens.pop()  # a trailing newline is not a token
    return tokens


class WordPieceTokenizer(Tokenizer):
    """BERT's tokenization: text -> basic split -> WordPiece ids, in the TensorFlow graph.

    Built on `tensorflow_text.FastBertTokenizer`, whose WordPiece model is a constant inside
    the graph: the tokenizer works inside `tf.data.Dataset.map`, a `tf.function` and a
    SavedModel with no Python and no files at run time.

    Args:
        vocabulary: path of a vocab.txt, or a list of tokens (index = id).
        lowercase: lower-case, NFD-normalise and strip accents first (uncased models).
        max_bytes_per_word: longer words become [UNK].

    Attributes:
        pad_id, unk_id, cls_id, sep_id, mask_id: the special-token ids, read from the vocab.
        vocabulary_size: number of tokens.
    """

    def __init__(self, vocabulary, lowercase=True, max_bytes_per_word=100, name=None):
        super().__init__(name=name)
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary = read_vocabulary(os.fspath(vocabulary))
        vocabulary = list(vocabulary)
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
        for key, token in SPECIAL_TOKENS.items():
            setattr(self, f"{key}_id", index[token])
        self.special_ids = sorted(index[tok] for tok in SPECIAL_TOKENS.values())
        self._index = index
        self._tokenizer = tf_text.FastBertTokenizer(
            vocab=vocabulary,
            token_out_type=tf.int32,
            unknown_token=SPECIAL_TOKENS["unk"],
            max_bytes_per_word=max_bytes_per_word,
            lower_case_nfd_strip_accents=False,  # `normalize` does it, as BERT did
            support_detokenization=True,
        )

    def _normalize(self, text):
        return normalize(text, self.lowercase)
