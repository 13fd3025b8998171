"""ALBERT's SentencePiece tokenizer on tensorflow-text, usable in tf.data and SavedModel graphs."""

import hashlib
import re

import tensorflow as tf
import tensorflow_text as tf_text

from kbert import _keras_private
from kbert.tokenizers.base import PieceTokenizer
from kbert.tokenizers.decoding import UNDERLINE  # SentencePiece's word start
from kbert.tokenizers.normalization import collapse_whitespace, lower, strip_combining_marks

_CHUNK = re.compile(r"\S+")

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
        return _keras_private.sentencepiece_op(self._model, self._shared_name)


class _FastSentencePiece(tf.Module):
    """`tensorflow_text.FastSentencepieceTokenizer` (its kernel `FastSentencepieceTokenize`
    runs in TFLite) as a trackable module for an ExportArchive; ids int32."""

    def __init__(self, model):
        super().__init__()
        self._tokenizer = tf_text.FastSentencepieceTokenizer(model)

    def tokenize(self, text):
        return tf.cast(self._tokenizer.tokenize(text), tf.int32)


class SentencePieceTokenizer(PieceTokenizer):
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
        pair_layout: how a pair is packed (`kbert.tokenizers.packing.PairLayout`, a
            (separators, second_segment) pair or "bert" / "roberta"); BERT's by default,
            RoBERTa's for XLM-R (<s> A </s></s> B </s>, all segment 0).

    Attributes:
        pad_id, unk_id, cls_id, sep_id, mask_id: the ids of <pad>, <unk>, [CLS], [SEP], [MASK].
        vocabulary: the pieces (index = id); vocabulary_size: their number.
    """

    def __init__(self, model, lowercase=True, keep_accents=False, split_special_tokens=True,
                 name=None, special_pieces=None, added_pieces=(), albert_preprocess=True,
                 pair_layout=None):
        super().__init__(name=name)
        self._given_layout(pair_layout)
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
        # (see _SharedModelResource's docstring)
        _keras_private.replace_sentencepiece_resource(self._tokenizer,
                                                      _SharedModelResource(model))
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

    tokenizer_type = "sentencepiece"
    metaspace = True  # "▁" starts a word

    def write_files(self, directory):
        import os

        from kbert.tokenizers.files import (SETTINGS_FILE, write_sentence_piece_model,
                                            write_settings)

        write_sentence_piece_model(self.model, os.path.join(directory, "spiece.model"))
        # All of them where one differs from ALBERT's, or where a tokenizer_config.json is
        # there already (a reused directory: none of another tokenizer's stays).
        if self.file_settings(every=False) or \
                os.path.isfile(os.path.join(directory, SETTINGS_FILE)):
            write_settings(self.file_settings(), directory)

    def file_settings(self, every=True):
        """The settings the spiece.model does not hold (DeBERTa-v3's special pieces, its
        added "[MASK]", no ALBERT preprocessing), for the tokenizer_config.json beside it:
        `kbert.tokenizers.tokenizer_types.load` passes them back, so that an export's
        tokenizer is the model's. `every=False`: only those that differ from ALBERT's."""
        defaults = {"special_pieces": dict(SPECIAL_PIECES), "added_pieces": [],
                    "albert_preprocess": True, "keep_accents": False}
        return {key: getattr(self, key) for key, value in defaults.items()
                if every or getattr(self, key) != value}

    def identity(self):
        return (tuple(self.vocabulary), self.model)

    def checkpoint_assets(self):
        return None, self.lowercase, self.model, None

    @property
    def charsmap(self):
        """The model's own normalisation, character by character (a
        `kbert.tokenizers.sentencepiece.charsmap.CharsMap`, read once per model)."""
        from kbert.tokenizers.sentencepiece import charsmap

        return charsmap.charsmap(self.model)

    def tflite_tokenizer(self):
        """tensorflow-text's `FastSentencepieceTokenizer` on the same model, for a model
        whose normalisation is its own (DeBERTa-v3's nmt_nfkc: the same ids, tested); a
        ValueError with ALBERT's preprocessing or lower-casing."""
        if self.albert_preprocess or self.lowercase:
            # Measured (tests/export/test_tflite_pipelines.py): tensorflow-text's
            # FastBertNormalizer (lower_case_nfd_strip_accents, a TFLite kernel) before
            # FastSentencepieceTokenizer differs from ALBERT's preprocessing on 390 of 12,267
            # characters U+0020-U+2FFF: it deletes every mark of category Mn, where ALBERT
            # deletes those of nonzero combining class only (Indic and Thai vowel signs are
            # kept), and it drops control and format characters and folds "ß".
            raise ValueError(
                "A SentencePieceTokenizer (ALBERT) cannot go inside a TFLite model: ALBERT's "
                "preprocessing (lower-casing, accent stripping by combining class, `` and '' "
                "to \", the digit-comma split) has no TFLite kernel, and tensorflow-text's "
                "FastBertNormalizer, the nearest one, gives other ids on Indic and Thai text "
                "(it deletes their vowel signs), control and format characters. Export with "
                "token ids in (kbert.serving.export_tflite) and tokenize on the host. (A "
                "SentencePiece model whose normalisation is its own, as DeBERTa-v3's, goes in.)")
        return _FastSentencePiece(self.model)

    def offset_words(self, texts):
        """The whitespace-separated chunks, which SentencePiece segments one by one, each
        with its "▁" (the words of transformers' Metaspace pre-tokenizer)."""
        return [[(m.group(), m.start()) for m in _CHUNK.finditer(text)] for text in texts]

    @property
    def word_normalization(self):
        """ALBERT's tokenizer strips the accents of cased text too (keep_accents=False)."""
        return self.lowercase, self.lowercase or not self.keep_accents

    def graph_encode(self, text, specials):
        """`kbert.tokenizers.sentencepiece.graph.encode`."""
        from kbert.tokenizers.sentencepiece import graph

        return graph.encode(text, self, specials)

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
