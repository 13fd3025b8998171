"""ALBERT's SentencePiece tokenizer on tensorflow-text, usable in tf.data and SavedModel graphs."""

import hashlib

import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.python.ops.sentencepiece_tokenizer import gen_sentencepiece_tokenizer

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


# DeBERTa-v3's spm.model names its specials so ([MASK] is not a piece: `added_pieces`).
DEBERTA_SPECIAL_PIECES = {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]",
                          "mask": "[MASK]"}


class _SharedModelResource(tf.saved_model.experimental.TrackableResource):
    """The SentencePiece model's resource under a name of its own (the model's sha256).

    tensorflow-text's resource has no name: the op kernel that made it owns it, and
    TensorFlow deletes that kernel when it clears its caches, which `tf.random.set_seed` and
    `keras.utils.set_random_seed` do; every later call of the tokenizer then fails with
    "Resource ... SentencepieceResource does not exist". A named resource belongs to the
    resource manager and outlives the kernel. Models with the same bytes share it, which is
    correct: it holds nothing but the model."""

    def __init__(self, model):
        super().__init__()
        self._model = model
        self._shared_name = "kbert_sentencepiece_" + hashlib.sha256(model).hexdigest()
        _ = self.resource_handle  # creates the resource

    def _create_resource(self):
        return gen_sentencepiece_tokenizer.sentencepiece_op(model=self._model,
                                                           shared_name=self._shared_name)


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
        special_pieces: key ("pad", "unk", "cls", "sep", "mask") -> piece; ALBERT's
            (`SPECIAL_PIECES`) by default, `DEBERTA_SPECIAL_PIECES` for DeBERTa-v3.
        added_pieces: tokens the model does not have, given the ids after its pieces in
            this order, as transformers' added tokens (DeBERTa-v3's "[MASK]": id 128000).
        albert_preprocess: ALBERT's preprocessing before SentencePiece (whitespace, quotes,
            accents, lower-case: `normalize`); `False` gives the text to SentencePiece as it
            is (lower-cased only with `lowercase`), as DeBERTa-v3's tokenizer.

    Attributes:
        pad_id, unk_id, cls_id, sep_id, mask_id: the ids of <pad>, <unk>, [CLS], [SEP], [MASK].
        vocabulary: the pieces (index = id); vocabulary_size: their number.
    """

    def __init__(self, model, lowercase=True, keep_accents=False, split_special_tokens=True,
                 name=None, special_pieces=None, added_pieces=(), albert_preprocess=True):
        super().__init__(name=name)
        special_pieces = dict(special_pieces or SPECIAL_PIECES)
        if set(special_pieces) != set(SPECIAL_PIECES):
            raise ValueError(f"special_pieces needs the keys {sorted(SPECIAL_PIECES)}, got "
                             f"{sorted(special_pieces)}.")
        self.added_pieces = list(added_pieces)
        self.albert_preprocess = bool(albert_preprocess)
        if not isinstance(model, bytes):
            with tf.io.gfile.GFile(str(model), "rb") as f:
                model = f.read()
        self.model = model
        self.lowercase = bool(lowercase)
        self.keep_accents = bool(keep_accents)
        self.split_special_tokens = bool(split_special_tokens)
        self.special_pieces = special_pieces
        self.special_tokens = list(special_pieces.values())
        self._tokenizer = tf_text.SentencepieceTokenizer(model=model, out_type=tf.int32)
        self._tokenizer._model_resource = _SharedModelResource(model)  # see its docstring
        size = int(self._tokenizer.vocab_size())
        self.vocabulary = [piece.decode("utf-8") for piece in
                           self._tokenizer.id_to_string(tf.range(size)).numpy()]
        self.vocabulary += [p for p in self.added_pieces if p not in self.vocabulary]
        self._index = {piece: i for i, piece in enumerate(self.vocabulary)}
        self._alphabet = "".join(sorted(set("".join(self.vocabulary))))
        missing = [piece for piece in special_pieces.values() if piece not in self._index]
        if missing:
            raise ValueError(
                f"The SentencePiece model lacks the pieces {missing}; the tokenizer needs "
                f"{list(special_pieces.values())}."
            )
        for key, piece in special_pieces.items():
            setattr(self, f"{key}_id", self._index[piece])
        self.special_ids = sorted(self._index[piece] for piece in special_pieces.values())
        self._replacements = (self._digit_comma_replacements() if self.albert_preprocess
                              else None)

    def starts_word(self, token):
        """A piece starts a word when it starts with "▁" (SentencePiece's space mark: the
        model puts one before every word); any other piece continues the word before it."""
        return token.startswith(UNDERLINE)

    def _normalize(self, text):
        if not self.albert_preprocess:
            return lower(text, self._alphabet) if self.lowercase else text
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
