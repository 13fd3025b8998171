"""Masked-LM head: logits only at the masked positions, output weights tied to the embedding."""

import keras
from keras import ops

from kbert.layers import _utils


@keras.saving.register_keras_serializable(package="kbert")
class MaskedLMHead(keras.layers.Layer):
    """Gathers the masked positions, transforms them, and scores them against the vocabulary.

    `dense -> activation -> LayerNorm`, then logits `x @ E^T + b` where `E` is the token
    embedding table of `token_embedding` (tied weights, as in BERT) and `b` a per-token bias.
    Only the `P` masked positions are scored, so the [B, S, V] logits tensor never exists.

    Tying is a link between two live layers and is not part of the config: the model that owns
    both (e.g. `BertPretrainer`) passes `token_embedding` again when it is rebuilt. A head made
    from its config alone has its own output kernel of the same shape.

    Args:
        vocabulary_size: number of output logits.
        token_embedding: a `keras.layers.Embedding` whose table is the output kernel, or
            `None` for an untied kernel.
        activation: name of the transform activation (see `kbert.layers.ACTIVATION_NAMES`).
        layer_norm_epsilon: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        inputs: float tensor [B, S, H], the sequence output.
        mask_positions: int tensor [B, P], the positions to score.

    Returns:
        logits [B, P, vocabulary_size].
    """

    def __init__(
        self,
        vocabulary_size,
        token_embedding=None,
        activation="gelu_approximate",
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = _utils.check_positive_int("vocabulary_size", vocabulary_size)
        if token_embedding is not None and token_embedding.input_dim != vocabulary_size:
            raise ValueError(
                f"vocabulary_size={vocabulary_size} does not match the tied token embedding's "
                f"{token_embedding.input_dim} rows."
            )
        self.token_embedding = token_embedding
        self.activation = activation
        self._activation_fn = _utils.get_activation(activation)
        self.layer_norm_epsilon = _utils.check_positive_float(
            "layer_norm_epsilon", layer_norm_epsilon
        )
        self.initializer_range = _utils.check_positive_float(
            "initializer_range", initializer_range
        )

    def build(self, inputs_shape, mask_positions_shape=None):
        # With a factorized embedding (ALBERT) the transform maps H down to the table width E.
        if self.token_embedding is not None:
            width = self.token_embedding.output_dim
        else:
            width = inputs_shape[-1]
        self.dense = keras.layers.Dense(
            width,
            activation=self._activation_fn,
            kernel_initializer=_utils.truncated_normal(self.initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.dense.build((None, None, inputs_shape[-1]))
        self.layer_norm.build((None, None, width))
        if self.token_embedding is None:
            self.output_kernel = self.add_weight(
                name="output_kernel",
                shape=(self.vocabulary_size, width),
                initializer=_utils.truncated_normal(self.initializer_range),
            )
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocabulary_size,), initializer="zeros"
        )
        self.built = True

    def call(self, inputs, mask_positions):
        positions = ops.cast(mask_positions, "int32")[:, :, None]  # [B, P, 1]
        x = ops.take_along_axis(inputs, positions, axis=1)  # [B, P, H]
        x = self.layer_norm(self.dense(x))  # [B, P, E]
        if self.token_embedding is not None:
            kernel = self.token_embedding.embeddings
        else:
            kernel = self.output_kernel
        kernel = ops.cast(ops.convert_to_tensor(kernel), x.dtype)
        # One [B*P, E] x [E, V] matmul: as a [B, P, E] x [V, E] einsum, TensorFlow's gradient
        # of the shared kernel was a batched matmul, [B, E, V] summed over the batch (a
        # tensor of B times the embedding table, and 7% of a bert_mini training step).
        logits = ops.matmul(ops.reshape(x, (-1, ops.shape(x)[-1])), ops.transpose(kernel))
        logits = ops.reshape(logits, (-1, ops.shape(positions)[1], self.vocabulary_size))
        return logits + ops.cast(ops.convert_to_tensor(self.output_bias), x.dtype)  # [B, P, V]

    def compute_output_shape(self, inputs_shape, mask_positions_shape):
        return tuple(mask_positions_shape) + (self.vocabulary_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config
