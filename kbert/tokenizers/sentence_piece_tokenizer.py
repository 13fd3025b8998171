"""ALBERT's SentencePiece tokenizer on tensorflow-text, usable in tf.data and SavedModel graphs."""

import tensorflow as tf
import tensorflow_text as tf_text

from kbert.tokenizers._tokenizer import Tokenizer

# ALBERT's spiece.model names its specials so; the keys are those of WordPieceTokenizer.
SPECIAL_PIECES = {
    "pad": "<pad>",
    "unk": "<unk>",
    "cls": "[CLS]",
    "sep": "[SEP]",
    "mask": "[MASK]",
}


def normalize(text, lowercase=True, keep_accents=False):
    """google-research/albert's `preprocess_text` in the graph: whitespace runs to one space
    and stripped, `` and '' to ", then NFKD with the combining marks (Mn) dropped, then
    lower-case. The SentencePiece model applies its own normalisation (nmt_nfkc) after it."""
    text = tf.strings.strip(tf.strings.regex_replace(text, r"\s+", " "))
    text = tf.strings.regex_replace(text, "``|''", '"')
    if not keep_accents:
        text = tf_text.normalize_utf8(text, "NFKD")
        text = tf.strings.regex_replace(text, r"\p{Mn}", "")
    if lowercase:
        text = tf.strings.lower(text, encoding="utf-8")
    return text


class SentencePieceTokenizer(Tokenizer):
    """ALBERT's tokenization: text -> ALBERT's normalisation -> SentencePiece ids, in the graph.

    Built on `tensorflow_text.SentencepieceTokenizer`; the model (spiece.model) is a constant
    in the graph. It has `WordPieceTokenizer`'s interface: `tokenize`, `detokenize`,
    `vocabulary`, `token_to_id`, `id_to_token` and the special ids.

    Args:
        model: the serialized SentencePiece model (bytes) or the path of a .model file.
        lowercase: lower-case first (ALBERT's released models are uncased).
        keep_accents: keep combining marks (ALBERT strips them).

    Attributes:
        pad_id, unk_id, cls_id, sep_id, mask_id: the ids of <pad>, <unk>, [CLS], [SEP], [MASK].
        vocabulary: the pieces (index = id); vocabulary_size: their number.
    """

    def __init__(self, model, lowercase=True, keep_accents=False, name=None):
        super().__init__(name=name)
        if not isinstance(model, bytes):
            with tf.io.gfile.GFile(str(model), "rb") as f:
                model = f.read()
        self.model = model
        self.lowercase = bool(lowercase)
        self.keep_accents = bool(keep_accents)
        self._tokenizer = tf_text.SentencepieceTokenizer(model=model, out_type=tf.int32)
        size = int(self._tokenizer.vocab_size())
        self.vocabulary = [piece.decode("utf-8") for piece in
                           self._tokenizer.id_to_string(tf.range(size)).numpy()]
        self._index = {piece: i for i, piece in enumerate(self.vocabulary)}
        missing = [piece for piece in SPECIAL_PIECES.values() if piece not in self._index]
        if missing:
            raise ValueError(
                f"The SentencePiece model lacks the pieces {missing}; ALBERT needs "
                f"{list(SPECIAL_PIECES.values())}."
            )
        for key, piece in SPECIAL_PIECES.items():
            setattr(self, f"{key}_id", self._index[piece])
        self.special_ids = sorted(self._index[piece] for piece in SPECIAL_PIECES.values())

    def _normalize(self, text):
        return normalize(text, self.lowercase, self.keep_accents)
