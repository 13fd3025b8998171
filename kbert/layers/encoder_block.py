"""What every kbert transformer block shares: its settings, its kernels, the attention softmax."""

import keras
from keras import ops

from kbert.layers import _utils


class EncoderBlock(_utils.SettingsConfig, keras.layers.Layer):
    """The base of the transformer blocks (`TransformerEncoder`, DeBERTa-v3's
    `DisentangledAttentionEncoder`, MobileBERT's `MobileBertEncoder`): the settings every
    block has, checked and saved (`get_config`) in one place, its dense layers' initializer,
    and the softmax of the attention scores over the real keys.

    A block builds `attention_probs_dropout` (a dropout on the attention probabilities) and
    its own layers in `build`.

    Args:
        num_heads, intermediate_size, activation, dropout, attention_dropout,
            layer_norm_epsilon, initializer_range: as `TransformerEncoder`.
    """

    def __init__(self, num_heads, intermediate_size, activation, dropout, attention_dropout,
                 layer_norm_epsilon, initializer_range, **kwargs):
        super().__init__(**kwargs)
        _utils.keep_settings(
            self, num_heads=num_heads, intermediate_size=intermediate_size,
            activation=activation, dropout=dropout, attention_dropout=attention_dropout,
            layer_norm_epsilon=layer_norm_epsilon, initializer_range=initializer_range)

    def _dense(self, units, name, activation=None):
        """A `Dense(units)` with the blocks' truncated-normal kernel initializer."""
        return keras.layers.Dense(
            units, activation=activation,
            kernel_initializer=_utils.truncated_normal(self.initializer_range),
            dtype=self.dtype_policy, name=name)

    def _layer_norm(self, name):
        return keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon,
                                               dtype=self.dtype_policy, name=name)

    def _head_size_of(self, hidden_size):
        """`hidden_size / num_heads`: the width of each head."""
        if hidden_size % self.num_heads:
            raise ValueError(
                f"The hidden size {hidden_size} is not divisible by num_heads={self.num_heads}."
            )
        return hidden_size // self.num_heads

    def _attention_probs(self, scores, padding_mask, dtype, training):
        """The softmax of `scores` [B, N, S, S] over the keys, in float32 even under a
        mixed-precision policy, padded keys (`padding_mask` [B, S] 0, or `None`: none) at
        -1e9 so that exp() of them is exactly 0.

        Returns: (the probabilities in `dtype` after `attention_probs_dropout`, the float32
            scores with the padding's -1e9).
        """
        scores = ops.cast(scores, "float32")
        if padding_mask is not None:
            bias = (1.0 - ops.cast(padding_mask, "float32")) * -1e9  # [B, S] over the keys
            scores = scores + bias[:, None, None, :]
        probs = ops.cast(ops.softmax(scores, axis=-1), dtype)
        return self.attention_probs_dropout(probs, training=training), scores

    def _feed_forward(self, inputs, attention, training):
        """BERT's post-LN ending (`TransformerEncoder`, DeBERTa-v3's block): dropout, residual
        and LayerNorm on `attention` [B, S, H], then the feed-forward network and the same."""
        x = self.attention_output_dropout(attention, training=training)
        x = self.attention_layer_norm(x + inputs)
        residual = x
        x = self.output_dense(self.intermediate_dense(x))
        x = self.output_dropout(x, training=training)
        return self.output_layer_norm(x + residual)
