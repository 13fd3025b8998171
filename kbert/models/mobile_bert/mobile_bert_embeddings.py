"""MobileBERT's embeddings: narrow token table over a 3-token window, projected to the width."""

import keras
from keras import ops

from kbert.layers import _utils
from kbert.layers.hash_dropout import HashDropout
from kbert.models.mobile_bert.no_norm import NORMALIZATION_TYPES, normalization

# torch.nn.LayerNorm's default epsilon: transformers builds MobileBERT's embedding norm
# without the config's layer_norm_eps (it matters only with normalization_type="layer_norm").
TORCH_LAYER_NORM_EPSILON = 1e-5


@keras.saving.register_keras_serializable(package="kbert")
class MobileBertEmbeddings(_utils.SettingsConfig, keras.layers.Layer):
    """Token embeddings `embedding_size` wide; with `trigram_input` each position sees the
    next, its own and the previous token's vectors concatenated ([B, S, 3E], zeros past the
    ends), a dense layer maps them to `hidden_size`, then position and segment embeddings
    (`hidden_size` wide) are added, normalized (NoNorm or LayerNorm) and dropped out.

    Args:
        vocabulary_size: number of WordPiece ids.
        hidden_size: width of the output (MobileBERT's inter-block width, 512).
        embedding_size: width of the token table (128).
        max_sequence_length: learned positions.
        type_vocab_size: segments.
        trigram_input: the 3-token window (the paper's kernel-3 convolution); `False`
            projects the token vector alone, and only when `embedding_size != hidden_size`.
        normalization_type: "no_norm" or "layer_norm".
        dropout: dropout rate after the normalization.
        initializer_range: stddev of the truncated-normal initializer.

    Call args:
        token_ids: int tensor [B, S].
        segment_ids: int tensor [B, S], or `None` for all zeros.
        padding_mask: int tensor [B, S] (1 = real token), or `None`: with `trigram_input`
            the padded positions' token vectors are zeros, so that a sequence's last token
            sees zeros after it however its batch is padded (as a batch of its own does).
            transformers reads the pad id's row there, which released checkpoints keep at
            zero (`padding_idx`); a model trained with kbert may not.

    Returns:
        float tensor [B, S, hidden_size].
    """

    def __init__(self, vocabulary_size, hidden_size, embedding_size=128, max_sequence_length=512,
                 type_vocab_size=2, trigram_input=True, normalization_type="no_norm",
                 dropout=0.0, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        if normalization_type not in NORMALIZATION_TYPES:
            raise ValueError(f"Unknown normalization_type {normalization_type!r}. Allowed: "
                             f"{', '.join(NORMALIZATION_TYPES)}.")
        _utils.keep_settings(
            self, vocabulary_size=vocabulary_size, hidden_size=hidden_size,
            embedding_size=_utils.check_positive_int("embedding_size", embedding_size),
            max_sequence_length=max_sequence_length,
            type_vocab_size=_utils.check_positive_int("type_vocab_size", type_vocab_size),
            trigram_input=bool(trigram_input), normalization_type=normalization_type,
            dropout=dropout, initializer_range=initializer_range)

        # === Layers ===
        def init():
            return _utils.truncated_normal(initializer_range)

        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, embedding_size, embeddings_initializer=init(),
            dtype=self.dtype_policy, name="token_embedding")
        self.segment_embedding = keras.layers.Embedding(
            type_vocab_size, hidden_size, embeddings_initializer=init(),
            dtype=self.dtype_policy, name="segment_embedding")
        self.projection = None
        if trigram_input or embedding_size != hidden_size:
            self.projection = keras.layers.Dense(hidden_size, kernel_initializer=init(),
                                                 dtype=self.dtype_policy, name="projection")
        self.norm = normalization(normalization_type, TORCH_LAYER_NORM_EPSILON,
                                  self.dtype_policy, "norm")
        self.dropout_layer = HashDropout(dropout, dtype=self.dtype_policy)

    def build(self, token_ids_shape, segment_ids_shape=None):
        token_ids_shape = tuple(token_ids_shape)
        self.token_embedding.build(token_ids_shape)
        self.segment_embedding.build(token_ids_shape)
        self.position_embedding = self.add_weight(
            name="position_embedding", shape=(self.max_sequence_length, self.hidden_size),
            initializer=_utils.truncated_normal(self.initializer_range))
        if self.projection is not None:
            window = 3 * self.embedding_size if self.trigram_input else self.embedding_size
            self.projection.build(token_ids_shape + (window,))
        self.norm.build(token_ids_shape + (self.hidden_size,))
        self.built = True

    def call(self, token_ids, segment_ids=None, padding_mask=None, training=None):
        sequence_length = ops.shape(token_ids)[1]
        _utils.check_sequence_length(sequence_length, self.max_sequence_length)
        x = self.token_embedding(token_ids)  # [B, S, E]
        if self.trigram_input:
            if padding_mask is not None:
                x = x * ops.cast(padding_mask, x.dtype)[..., None]
            following = ops.pad(x[:, 1:], ((0, 0), (0, 1), (0, 0)))
            preceding = ops.pad(x[:, :-1], ((0, 0), (1, 0), (0, 0)))
            x = ops.concatenate([following, x, preceding], axis=-1)  # [B, S, 3E]
        if self.projection is not None:
            x = self.projection(x)  # [B, S, H]
        positions = ops.slice(ops.convert_to_tensor(self.position_embedding), (0, 0),
                              (sequence_length, self.hidden_size))
        x = x + ops.cast(positions, x.dtype)[None]
        if segment_ids is None:
            segment_ids = ops.zeros_like(token_ids)
        x = x + self.segment_embedding(segment_ids)
        return self.dropout_layer(self.norm(x), training=training)

    def compute_output_spec(self, token_ids, segment_ids=None, padding_mask=None, training=None):
        return keras.KerasTensor(tuple(token_ids.shape) + (self.hidden_size,),
                                 dtype=self.compute_dtype)
