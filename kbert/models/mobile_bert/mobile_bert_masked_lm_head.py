"""MobileBERT's masked-LM head: the tied narrow table widened by extra output rows."""

import keras
from keras import ops

from kbert.layers import _utils
from kbert.layers.masked_lm_head import MaskedLMHead


@keras.saving.register_keras_serializable(package="kbert")
class MobileBertMaskedLMHead(MaskedLMHead):
    """`dense(H) -> activation -> LayerNorm` on the masked positions, then logits against
    `[E | extra]`: the token table `E` [V, embedding_size] (tied) beside an own
    `extra_output_kernel` [V, H - embedding_size], plus a per-token bias. transformers'
    `MobileBertLMPredictionHead` computes the same with `cat([decoder.weight.T, dense.weight])`.

    Args: those of `MaskedLMHead`; the tied `token_embedding` is needed (its width is the
        embedding size; the input's width, the hidden size, is at least as large).
    """

    def build(self, inputs_shape, mask_positions_shape=None):
        hidden = inputs_shape[-1]
        if self.token_embedding is not None:
            embedding_size = self.token_embedding.output_dim
        else:
            embedding_size = hidden
        if embedding_size > hidden:
            raise ValueError(f"The token table ({embedding_size} wide) is wider than the "
                             f"hidden size {hidden}.")
        self.dense = keras.layers.Dense(
            hidden, activation=self._activation_fn,
            kernel_initializer=_utils.truncated_normal(self.initializer_range),
            dtype=self.dtype_policy, name="dense")
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm")
        self.dense.build((None, None, hidden))
        self.layer_norm.build((None, None, hidden))
        if self.token_embedding is None:
            self.output_kernel = self.add_weight(
                name="output_kernel", shape=(self.vocabulary_size, embedding_size),
                initializer=_utils.truncated_normal(self.initializer_range))
        self.extra_output_kernel = self.add_weight(
            name="extra_output_kernel", shape=(self.vocabulary_size, hidden - embedding_size),
            initializer=_utils.truncated_normal(self.initializer_range))
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocabulary_size,), initializer="zeros")
        self.built = True

    def call(self, inputs, mask_positions):
        positions = ops.cast(mask_positions, "int32")[:, :, None]  # [B, P, 1]
        x = ops.take_along_axis(inputs, positions, axis=1)  # [B, P, H]
        x = self.layer_norm(self.dense(x))  # [B, P, H]
        table = (self.token_embedding.embeddings if self.token_embedding is not None
                 else self.output_kernel)
        kernel = ops.concatenate([ops.convert_to_tensor(table),
                                  ops.convert_to_tensor(self.extra_output_kernel)], axis=1)
        logits = ops.einsum("bph,vh->bpv", x, ops.cast(kernel, x.dtype))  # [B, P, V]
        return logits + ops.cast(ops.convert_to_tensor(self.output_bias), x.dtype)
