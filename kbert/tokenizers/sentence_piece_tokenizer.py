"""ALBERT's SentencePiece tokenizer on tensorflow-text, usable in tf.data and SavedModel graphs."""

import tensorflow as tf
import tensorflow_text as tf_text

from kbert.tokenizers._tokenizer import Tokenizer
from kbert.tokenizers.normalization import collapse_whitespace, lower, strip_combining_marks

UNDERLINE = "\u2581"  # SentencePiece's word start

# ALBERT's spiece.model names its specials so; the keys are those of WordPieceTokenizer.
SPECIAL_PIECES = {
    "pad": "<pad>",
    "unk": "<unk>",
    "cls": "[CLS]",
    "sep": "[SEP]",
    "mask": "[MASK]",
}


def normalize(text, lowercase=True, keep_accents=False, alphabet=None):
    """google-research/albert's `preprocess_text` in the graph: whitespace runs to one space
    and stripped, `` and '' to ", then NFKD with the combining marks dropped, then
    lower-case. The SentencePiece model applies its own normalisation (nmt_nfkc) after it.
    `alphabet`: the pieces' characters, if known (see `normalization.lower`)."""
    text = collapse_whitespace(text)
    text = tf.strings.regex_replace(text, "``|''", '"')
    if not keep_accents:
        text = strip_combining_marks(text)
    if lowercase:
        text = lower(text, alphabet)
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
        split_special_tokens: True (the default): "[MASK]" typed in the text is split like
            any text; False: each special piece's literal gives its id (transformers'
            default). See `WordPieceTokenizer`.

    Attributes:
        pad_id, unk_id, cls_id, sep_id, mask_id: the ids of <pad>, <unk>, [CLS], [SEP], [MASK].
        vocabulary: the pieces (index = id); vocabulary_size: their number.
    """

    def __init__(self, model, lowercase=True, keep_accents=False, split_special_tokens=True,
                 name=None):
        super().__init__(name=name)
        if not isinstance(model, bytes):
            with tf.io.gfile.GFile(str(model), "rb") as f:
                model = f.read()
        self.model = model
        self.lowercase = bool(lowercase)
        self.keep_accents = bool(keep_accents)
        self.split_special_tokens = bool(split_special_tokens)
        self.special_tokens = list(SPECIAL_PIECES.values())
        self._tokenizer = tf_text.SentencepieceTokenizer(model=model, out_type=tf.int32)
        size = int(self._tokenizer.vocab_size())
        self.vocabulary = [piece.decode("utf-8") for piece in
                           self._tokenizer.id_to_string(tf.range(size)).numpy()]
        self._index = {piece: i for i, piece in enumerate(self.vocabulary)}
        self._alphabet = "".join(sorted(set("".join(self.vocabulary))))
        missing = [piece for piece in SPECIAL_PIECES.values() if piece not in self._index]
        if missing:
            raise ValueError(
                f"The SentencePiece model lacks the pieces {missing}; ALBERT needs "
                f"{list(SPECIAL_PIECES.values())}."
            )
        for key, piece in SPECIAL_PIECES.items():
            setattr(self, f"{key}_id", self._index[piece])
        self.special_ids = sorted(self._index[piece] for piece in SPECIAL_PIECES.values())
        self._replacements = self._digit_comma_replacements()

    def _normalize(self, text):
        return normalize(text, self.lowercase, self.keep_accents, self._alphabet)

    def _tokenize_normalized(self, text):
        ids = super()._tokenize_normalized(text)  # [strings, (pieces)]
        if self._replacements is None:
            return ids
        replaced = tf.gather(self._replacements, ids.flat_values)  # [pieces, (ids)]
        return ids.with_flat_values(replaced).merge_dims(1, 2)

    def _digit_comma_replacements(self):
        """google-research/albert's `encode_pieces` (and transformers' AlbertTokenizer) splits
        each piece that ends in a digit and a comma ("▁1,", "00,") into the pieces of its
        digits and a ",": so that "1,000" is not "▁1," "000". The split depends on the piece
        only, so it is a table: ragged [vocabulary, (ids)], row i = [i] for the other pieces;
        None when the model has no such piece."""
        split = {}
        for i, piece in enumerate(self.vocabulary):
            if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
                with tf.init_scope():
                    ids = self._tokenizer.tokenize(piece[:-1].replace(UNDERLINE, "")).numpy()
                pieces = [self.vocabulary[j] for j in ids]
                if piece[0] != UNDERLINE and pieces[0].startswith(UNDERLINE):
                    pieces = pieces[1:] if pieces[0] == UNDERLINE else [pieces[0][1:]] + pieces[1:]
                split[i] = [self._index.get(p, self.unk_id) for p in pieces + [","]]
        if not split:
            return None
        rows = [split.get(i, [i]) for i in range(len(self.vocabulary))]
        return tf.RaggedTensor.from_row_lengths([i for row in rows for i in row],
                                                [len(row) for row in rows])
