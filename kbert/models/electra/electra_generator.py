"""ELECTRA's generator encoder: a narrower stack on the discriminator's shared embeddings."""

import keras

from kbert.layers import TransformerEncoder, _utils
from kbert.models.backbone import encoder_blocks


def generator_size(config, hidden_fraction=0.25, layers_fraction=1.0):
    """The generator's (hidden_size, num_layers, num_heads, intermediate_size).

    As google-research/electra's `get_generator_config`: hidden and layers are the
    discriminator's times the fractions (rounded), the feed-forward is 4 x hidden and there is
    one head per 64 units (at least one).
    """
    for name, value in (("generator_hidden_fraction", hidden_fraction),
                        ("generator_layers_fraction", layers_fraction)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {value!r}.")
    hidden = max(1, int(round(config.hidden_size * hidden_fraction)))
    layers = max(1, int(round(config.num_layers * layers_fraction)))
    return hidden, layers, max(1, hidden // 64), 4 * hidden


@keras.saving.register_keras_serializable(package="kbert")
class ElectraGenerator(_utils.SettingsConfig, keras.layers.Layer):
    """A dense projection to `hidden_size` (when the embeddings are another width) and
    `num_layers` post-LN transformer blocks, applied to embeddings made elsewhere.

    Args: as `TransformerEncoder`, plus `hidden_size` and `num_layers`.

    Call args:
        embeddings: float tensor [B, S, E], the shared embeddings before any projection.
        padding_mask: int tensor [B, S].

    Returns:
        float tensor [B, S, hidden_size].
    """

    def __init__(self, hidden_size, num_layers, num_heads, intermediate_size,
                 activation="gelu_approximate", dropout=0.1, attention_dropout=0.1,
                 layer_norm_epsilon=1e-12, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        _utils.keep_settings(
            self, hidden_size=hidden_size, num_layers=num_layers, num_heads=num_heads,
            intermediate_size=intermediate_size, activation=activation, dropout=dropout,
            attention_dropout=attention_dropout, layer_norm_epsilon=layer_norm_epsilon,
            initializer_range=initializer_range)
        # The blocks take the generator's own settings of their names.
        self.transformer_layers = encoder_blocks(TransformerEncoder, self, num_layers,
                                                 self.dtype_policy)
        self.projection = None

    def build(self, embeddings_shape, padding_mask_shape=None):
        if embeddings_shape[-1] != self.hidden_size:
            self.projection = keras.layers.Dense(
                self.hidden_size,
                kernel_initializer=_utils.truncated_normal(self.initializer_range),
                dtype=self.dtype_policy,
                name="projection",
            )
            self.projection.build(embeddings_shape)
        shape = tuple(embeddings_shape[:-1]) + (self.hidden_size,)
        for block in self.transformer_layers:
            block.build(shape, padding_mask_shape)
        self.built = True

    def call(self, embeddings, padding_mask=None, training=None):
        x = embeddings if self.projection is None else self.projection(embeddings)
        for block in self.transformer_layers:
            x = block(x, padding_mask=padding_mask, training=training)  # [B, S, Hg]
        return x

    def compute_output_shape(self, embeddings_shape, padding_mask_shape=None):
        return tuple(embeddings_shape[:-1]) + (self.hidden_size,)
