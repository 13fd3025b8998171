"""DeBERTa-v3's input embeddings (tokens only) and its relative position table."""

import keras
from keras import ops

from kbert.layers import _utils
from kbert.layers.hash_dropout import HashDropout


@keras.saving.register_keras_serializable(package="kbert")
class DebertaV3Embeddings(_utils.SettingsConfig, keras.layers.Layer):
    """Token embeddings, LayerNorm, padded positions zeroed, dropout (Hugging Face's
    `DebertaV2Embeddings` with `position_biased_input=False` and no segments).

    Gradient-disentangled embedding sharing (DeBERTa-v3's replaced-token detection): with
    `shared` set to another `keras.layers.Embedding` (the generator's), the table used is
    `stop_gradient(shared.embeddings) + token_embedding.embeddings`, so this layer's own table
    is the delta. `shared` is a link between live layers, made by the pretrainer that owns
    both (`share(layer)`), and not part of the config.

    Args:
        vocabulary_size, hidden_size, dropout, layer_norm_epsilon, initializer_range.

    Call args:
        token_ids: int [B, S].
        padding_mask: [B, S] or `None`.

    Returns:
        float [B, S, hidden_size].
    """

    def __init__(self, vocabulary_size, hidden_size, dropout=0.1, layer_norm_epsilon=1e-7,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        _utils.keep_settings(self, vocabulary_size=vocabulary_size, hidden_size=hidden_size,
                             dropout=dropout, layer_norm_epsilon=layer_norm_epsilon,
                             initializer_range=initializer_range)

        # === Layers ===
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_size,
            embeddings_initializer=_utils.truncated_normal(initializer_range),
            dtype=self.dtype_policy, name="token_embedding")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm")
        self.dropout_layer = HashDropout(dropout, dtype=self.dtype_policy)

    @property
    def shared(self):
        """The `keras.layers.Embedding` whose table this one adds its own to, or `None`."""
        return self.__dict__.get("_shared")

    def share(self, layer):
        """Links `layer` (another model's token `Embedding`) as `shared`; `None` unlinks."""
        # Not tracked by Keras: the other table stays the other model's weight.
        object.__setattr__(self, "_shared", layer)

    def build(self, token_ids_shape, padding_mask_shape=None):
        self.token_embedding.build(token_ids_shape)
        self.layer_norm.build(tuple(token_ids_shape) + (self.hidden_size,))
        self.built = True

    def lookup(self, token_ids):
        """The token vectors [B, S, H] before the LayerNorm."""
        if self.shared is None:
            return self.token_embedding(token_ids)
        table = (ops.stop_gradient(ops.convert_to_tensor(self.shared.embeddings))
                 + ops.convert_to_tensor(self.token_embedding.embeddings))
        return ops.cast(ops.take(table, ops.cast(token_ids, "int32"), axis=0),
                        self.compute_dtype)

    def call(self, token_ids, padding_mask=None, training=None):
        x = self.layer_norm(self.lookup(token_ids))
        if padding_mask is not None:
            x = x * ops.cast(padding_mask, x.dtype)[:, :, None]
        return self.dropout_layer(x, training=training)

    def compute_output_spec(self, token_ids, padding_mask=None, training=None):
        return keras.KerasTensor(tuple(token_ids.shape) + (self.hidden_size,),
                                 dtype=self.compute_dtype)


@keras.saving.register_keras_serializable(package="kbert")
class RelativeEmbedding(keras.layers.Layer):
    """The table of relative-position embeddings, [2 * position_buckets, H], layer-normalized
    (Hugging Face's `encoder.rel_embeddings` + `encoder.LayerNorm`). Every block reads it.

    Call args:
        inputs: any float [B, S, H] tensor (gives the graph a dependency; not read).

    Returns:
        float [2 * position_buckets, H].
    """

    def __init__(self, position_buckets, hidden_size, layer_norm_epsilon=1e-7,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.position_buckets = _utils.check_positive_int("position_buckets", position_buckets)
        self.hidden_size = _utils.check_positive_int("hidden_size", hidden_size)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm")

    def build(self, inputs_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings", shape=(2 * self.position_buckets, self.hidden_size),
            initializer=_utils.truncated_normal(self.initializer_range))
        self.layer_norm.build((None, self.hidden_size))
        self.built = True

    def call(self, inputs=None):
        return self.layer_norm(ops.cast(ops.convert_to_tensor(self.embeddings),
                                        self.compute_dtype))

    def compute_output_spec(self, inputs=None):
        return keras.KerasTensor((2 * self.position_buckets, self.hidden_size),
                                 dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update({
            "position_buckets": self.position_buckets, "hidden_size": self.hidden_size,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
        })
        return config
