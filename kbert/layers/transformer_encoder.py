"""Post-LayerNorm transformer encoder block, as in BERT."""

import keras
from keras import ops

from kbert.layers import _utils
from kbert.layers.hash_dropout import HashDropout


@keras.saving.register_keras_serializable(package="kbert")
class TransformerEncoder(keras.layers.Layer):
    """Self-attention and a feed-forward network, each followed by dropout, residual, LayerNorm.

    Queries, keys and values come from one fused projection (one matmul instead of three);
    padded keys get a large negative score before the softmax, which runs in float32 even under
    a mixed-precision policy.

    Args:
        num_heads: attention heads; the input width must be divisible by it.
        intermediate_size: width of the feed-forward layer.
        activation: name of the feed-forward activation (see `kbert.layers.ACTIVATION_NAMES`).
        dropout: dropout rate on the attention output and the feed-forward output.
        attention_dropout: dropout rate on the attention probabilities.
        layer_norm_epsilon: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        inputs: float tensor [B, S, H].
        padding_mask: [B, S], 1 (or True) for real tokens, 0 for padding; `None` attends to all.
        return_attention_scores: also return the attention scores before the softmax
            (float32 [B, N, S, S], padded keys at -1e9), which TinyBERT distils.

    Returns:
        float tensor [B, S, H]; with `return_attention_scores`, (that, scores).
    """

    def __init__(
        self,
        num_heads,
        intermediate_size,
        activation="gelu_approximate",
        dropout=0.1,
        attention_dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = _utils.check_positive_int("num_heads", num_heads)
        self.intermediate_size = _utils.check_positive_int("intermediate_size", intermediate_size)
        self.activation = activation
        self._activation_fn = _utils.get_activation(activation)
        self.dropout = _utils.check_rate("dropout", dropout)
        self.attention_dropout = _utils.check_rate("attention_dropout", attention_dropout)
        self.layer_norm_epsilon = _utils.check_positive_float(
            "layer_norm_epsilon", layer_norm_epsilon
        )
        self.initializer_range = _utils.check_positive_float(
            "initializer_range", initializer_range
        )

    def build(self, inputs_shape, padding_mask_shape=None):
        hidden_size = inputs_shape[-1]
        if hidden_size % self.num_heads:
            raise ValueError(
                f"The hidden size {hidden_size} is not divisible by num_heads={self.num_heads}."
            )
        head_size = hidden_size // self.num_heads
        self._scale = 1.0 / head_size**0.5
        policy = self.dtype_policy

        def kernel_init():
            return _utils.truncated_normal(self.initializer_range)

        # === Layers ===
        self.qkv_dense = keras.layers.EinsumDense(
            "bsh,hcnd->bscnd",
            output_shape=(None, 3, self.num_heads, head_size),
            bias_axes="cnd",
            kernel_initializer=kernel_init(),
            dtype=policy,
            name="qkv_dense",
        )
        self.attention_output_dense = keras.layers.EinsumDense(
            "bsnd,ndh->bsh",
            output_shape=(None, hidden_size),
            bias_axes="h",
            kernel_initializer=kernel_init(),
            dtype=policy,
            name="attention_output_dense",
        )
        self.attention_probs_dropout = HashDropout(self.attention_dropout, dtype=policy)
        self.attention_output_dropout = HashDropout(self.dropout, dtype=policy)
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=policy, name="attention_layer_norm"
        )
        self.intermediate_dense = keras.layers.Dense(
            self.intermediate_size,
            activation=self._activation_fn,
            kernel_initializer=kernel_init(),
            dtype=policy,
            name="intermediate_dense",
        )
        self.output_dense = keras.layers.Dense(
            hidden_size, kernel_initializer=kernel_init(), dtype=policy, name="output_dense"
        )
        self.output_dropout = HashDropout(self.dropout, dtype=policy)
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=policy, name="output_layer_norm"
        )

        inputs_shape = tuple(inputs_shape)
        self.qkv_dense.build(inputs_shape)
        self.attention_output_dense.build(inputs_shape[:-1] + (self.num_heads, head_size))
        self.attention_layer_norm.build(inputs_shape)
        self.intermediate_dense.build(inputs_shape)
        self.output_dense.build(inputs_shape[:-1] + (self.intermediate_size,))
        self.output_layer_norm.build(inputs_shape)
        self.built = True

    def _attention(self, x, padding_mask, training):
        qkv = self.qkv_dense(x)  # [B, S, 3, N, D]
        query = qkv[:, :, 0] * ops.cast(self._scale, qkv.dtype)
        key, value = qkv[:, :, 1], qkv[:, :, 2]
        scores = ops.einsum("bqnd,bknd->bnqk", query, key)  # [B, N, S, S]
        scores = ops.cast(scores, "float32")
        if padding_mask is not None:
            # [B, 1, 1, S]: 0 for real keys, -1e9 for padding; exp() of it is exactly 0.
            bias = (1.0 - ops.cast(padding_mask, "float32")) * -1e9
            scores = scores + bias[:, None, None, :]
        probs = ops.cast(ops.softmax(scores, axis=-1), x.dtype)
        probs = self.attention_probs_dropout(probs, training=training)
        context = ops.einsum("bnqk,bknd->bqnd", probs, value)  # [B, S, N, D]
        return self.attention_output_dense(context), scores  # [B, S, H]

    def call(self, inputs, padding_mask=None, training=None, return_attention_scores=False):
        x, scores = self._attention(inputs, padding_mask, training)
        x = self.attention_output_dropout(x, training=training)
        x = self.attention_layer_norm(x + inputs)
        residual = x
        x = self.output_dense(self.intermediate_dense(x))
        x = self.output_dropout(x, training=training)
        x = self.output_layer_norm(x + residual)
        return (x, scores) if return_attention_scores else x

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return tuple(inputs_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "intermediate_size": self.intermediate_size,
                "activation": self.activation,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config
