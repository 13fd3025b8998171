"""Token + segment + learned absolute position embeddings (BERT, ALBERT, DistilBERT, ELECTRA,
RoBERTa)."""

import keras
from keras import ops

from kbert.layers import _utils
from kbert.layers.hash_dropout import HashDropout


@keras.saving.register_keras_serializable(package="kbert")
class Embeddings(_utils.SettingsConfig, keras.layers.Layer):
    """Sums token, segment and position embeddings, then LayerNorm and dropout.

    With `embedding_size` smaller than `hidden_size` (ALBERT's factorized embedding), the
    tables are `embedding_size` wide and a dense projection maps the normalized sum to
    `hidden_size`. The token table is exposed as `token_embedding` so that a masked-LM head
    can tie its output weights to it.

    Args:
        vocabulary_size: number of WordPiece ids.
        hidden_size: width of the output.
        max_sequence_length: number of learned positions (the longest input).
        type_vocab_size: number of segments; 0 drops segment embeddings (DistilBERT).
        embedding_size: width of the tables; `None` means `hidden_size` (no projection).
        dropout: dropout rate after the LayerNorm.
        layer_norm_epsilon: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal initializer.
        position_offset: rows of the position table before the first position (RoBERTa's
            padding index + 1 = 2): the table has `max_sequence_length + position_offset`
            rows, the i-th real token takes row `position_offset + i` and padding takes row
            `position_offset - 1`, as fairseq and transformers count them.

    Call args:
        token_ids: int tensor [B, S].
        segment_ids: int tensor [B, S], or `None` for all zeros.
        padding_mask: int tensor [B, S] (1 for tokens), which places the positions when
            `position_offset` > 0; `None`: no padding.
        project: `False` skips the projection and returns the `embedding_size`-wide
            embeddings (ELECTRA's generator shares them and projects to its own width).

    Returns:
        float tensor [B, S, hidden_size] ([B, S, embedding_size] with `project=False`).
    """

    def __init__(
        self,
        vocabulary_size,
        hidden_size,
        max_sequence_length=512,
        type_vocab_size=2,
        embedding_size=None,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        position_offset=0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if embedding_size is not None:
            _utils.check_positive_int("embedding_size", embedding_size)
        _utils.keep_settings(
            self, vocabulary_size=vocabulary_size, hidden_size=hidden_size,
            max_sequence_length=max_sequence_length,
            type_vocab_size=_utils.check_positive_int("type_vocab_size", type_vocab_size,
                                                      allow_zero=True),
            embedding_size=embedding_size, dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon, initializer_range=initializer_range,
            position_offset=_utils.check_positive_int("position_offset", position_offset,
                                                      allow_zero=True))
        width = embedding_size or hidden_size

        # === Layers ===
        def table(rows, name):
            return keras.layers.Embedding(
                rows, width, embeddings_initializer=_utils.truncated_normal(initializer_range),
                dtype=self.dtype_policy, name=name)

        self.token_embedding = table(vocabulary_size, "token_embedding")
        self.segment_embedding = table(type_vocab_size, "segment_embedding") if (
            type_vocab_size) else None
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.dropout_layer = HashDropout(dropout, dtype=self.dtype_policy)
        self.projection = None
        if width != hidden_size:
            self.projection = keras.layers.Dense(
                hidden_size,
                kernel_initializer=_utils.truncated_normal(initializer_range),
                dtype=self.dtype_policy,
                name="projection",
            )

    def build(self, token_ids_shape, segment_ids_shape=None):
        width = self.embedding_size or self.hidden_size
        self.token_embedding.build(token_ids_shape)
        if self.segment_embedding is not None:
            self.segment_embedding.build(token_ids_shape)
        self.position_embedding = self.add_weight(
            name="position_embedding",
            shape=(self.max_sequence_length + self.position_offset, width),
            initializer=_utils.truncated_normal(self.initializer_range),
        )
        self.layer_norm.build(tuple(token_ids_shape) + (width,))
        if self.projection is not None:
            self.projection.build(tuple(token_ids_shape) + (width,))
        self.built = True

    def call(self, token_ids, segment_ids=None, training=None, project=True,
             padding_mask=None):
        sequence_length = ops.shape(token_ids)[1]
        _utils.check_sequence_length(sequence_length, self.max_sequence_length)
        x = self.token_embedding(token_ids)  # [B, S, E]
        if self.position_offset:
            x = x + ops.cast(self._offset_positions(token_ids, padding_mask), x.dtype)
        else:
            # Slicing the table is cheaper than a gather of arange(S), and its gradient is dense.
            positions = ops.slice(
                ops.convert_to_tensor(self.position_embedding),
                (0, 0),
                (sequence_length, ops.shape(x)[-1]),
            )
            x = x + ops.cast(positions, x.dtype)[None]
        if self.segment_embedding is not None:
            if segment_ids is None:
                segment_ids = ops.zeros_like(token_ids)
            x = x + self.segment_embedding(segment_ids)
        x = self.layer_norm(x)
        x = self.dropout_layer(x, training=training)
        if project and self.projection is not None:
            x = self.projection(x)  # [B, S, H]
        return x

    def _offset_positions(self, token_ids, padding_mask):
        """[B, S, E] position embeddings counted from `position_offset` over the tokens, the
        padding at `position_offset - 1` (transformers' `create_position_ids_from_input_ids`)."""
        if padding_mask is None:
            padding_mask = ops.ones_like(token_ids)
        mask = ops.cast(ops.not_equal(padding_mask, 0), "int32")
        positions = ops.cumsum(mask, axis=1) * mask + (self.position_offset - 1)  # [B, S]
        return ops.take(ops.convert_to_tensor(self.position_embedding), positions, axis=0)

    def compute_output_spec(self, token_ids, segment_ids=None, training=None, project=True,
                            padding_mask=None):
        width = self.hidden_size if project else (self.embedding_size or self.hidden_size)
        return keras.KerasTensor(tuple(token_ids.shape) + (width,), dtype=self.compute_dtype)
