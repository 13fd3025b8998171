"""Post-LayerNorm transformer encoder block, as in BERT."""

import keras
from keras import ops

from kbert.layers import _utils, encoder_block
from kbert.layers.encoder_block import EncoderBlock
from kbert.layers.hash_dropout import HashDropout
from kbert.layers.lora import EinsumDense


@keras.saving.register_keras_serializable(package="kbert")
class TransformerEncoder(EncoderBlock):
    """Self-attention and a feed-forward network, each followed by dropout, residual, LayerNorm.

    Queries, keys and values come from one fused projection (one matmul instead of three);
    attention runs through `keras.ops.dot_product_attention` (fused where the backend can),
    over the real keys, with the softmax in float32 even under a mixed-precision policy.

    Args:
        num_heads: attention heads; the input width must be divisible by it, unless
            `head_size` is given.
        intermediate_size: width of the feed-forward layer.
        activation: name of the feed-forward activation (see `kbert.layers.ACTIVATION_NAMES`).
        dropout: dropout rate on the attention output and the feed-forward output.
        attention_dropout: dropout rate on the attention probabilities.
        layer_norm_epsilon: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal kernel initializer.
        head_size: the width of each head; `None`: input width / `num_heads`. A pruned
            block (`kbert.models.pruning`) keeps its heads' width with fewer of them.

    Call args:
        inputs: float tensor [B, S, H].
        padding_mask: [B, S], 1 (or True) for real tokens, 0 for padding; `None` attends to all.
        return_attention_scores: also return the attention scores before the softmax
            (float32 [B, N, S, S], padded keys at -1e9), which TinyBERT distils.
        return_attention_probs: also return the attention probabilities [B, N, S, S]
            (before dropout), as transformers' `output_attentions`.

    Returns:
        float tensor [B, S, H]; with `return_attention_scores` and/or
        `return_attention_probs`, (that, scores and/or probabilities, in that order).
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
        head_size=None,
        **kwargs,
    ):
        super().__init__(num_heads, intermediate_size, activation, dropout, attention_dropout,
                         layer_norm_epsilon, initializer_range, head_size, **kwargs)

    def build(self, inputs_shape, padding_mask_shape=None):
        hidden_size = inputs_shape[-1]
        head_size = self._head_size_of(hidden_size)
        self._scale = 1.0 / head_size**0.5
        policy = self.dtype_policy

        def kernel_init():
            return _utils.truncated_normal(self.initializer_range)

        # === Layers ===
        self.qkv_dense = EinsumDense(
            "bsh,hcnd->bscnd",
            output_shape=(None, 3, self.num_heads, head_size),
            bias_axes="cnd",
            kernel_initializer=kernel_init(),
            dtype=policy,
            name="qkv_dense",
        )
        self.attention_output_dense = EinsumDense(
            "bsnd,ndh->bsh",
            output_shape=(None, hidden_size),
            bias_axes="h",
            kernel_initializer=kernel_init(),
            dtype=policy,
            name="attention_output_dense",
        )
        self.attention_probs_dropout = HashDropout(self.attention_dropout, dtype=policy)
        self.attention_output_dropout = HashDropout(self.dropout, dtype=policy)
        self.attention_layer_norm = self._layer_norm("attention_layer_norm")
        self.intermediate_dense = self._dense(self.intermediate_size, "intermediate_dense",
                                              self._activation_fn)
        self.output_dense = self._dense(hidden_size, "output_dense")
        self.output_dropout = HashDropout(self.dropout, dtype=policy)
        self.output_layer_norm = self._layer_norm("output_layer_norm")

        inputs_shape = tuple(inputs_shape)
        self.qkv_dense.build(inputs_shape)
        self.attention_output_dense.build(inputs_shape[:-1] + (self.num_heads, head_size))
        self.attention_layer_norm.build(inputs_shape)
        self.intermediate_dense.build(inputs_shape)
        self.output_dense.build(inputs_shape[:-1] + (self.intermediate_size,))
        self.output_layer_norm.build(inputs_shape)
        self.built = True

    def _attention(self, x, padding_mask, training, explicit):
        if encoder_block.exporting_as_matmuls() and not explicit and not training and \
                self.qkv_dense.quantization_mode is None and \
                self.attention_output_dense.quantization_mode is None:
            return self._attention_as_matmuls(x, padding_mask), ()
        qkv = self.qkv_dense(x)  # [B, S, 3, N, D]
        query = qkv[:, :, 0] * ops.cast(self._scale, qkv.dtype)
        key, value = qkv[:, :, 1], qkv[:, :, 2]
        out = self._attend(query, key, value, padding_mask, training, explicit=explicit)
        context, internals = (out[0], out[1:]) if explicit else (out, ())
        return self.attention_output_dense(context), internals  # [B, S, H]

    def _attention_as_matmuls(self, x, padding_mask):
        """`_attention`'s inference under `encoder_block.attention_as_matmuls`, for another
        runtime: the query, the key and the value each one matmul of a [H, N x D] slice of
        `qkv_dense`'s kernel (the query's scaled in it), and the output one of [N x D, H], as
        a PyTorch export has them. tf2onnx writes the fused [B, S, 3, N, D] projection as a
        Gemm and three Slices of its output; ONNX Runtime ran all-MiniLM-L6-v2's graph (batch
        32 of 28 tokens) about 5% slower so. The same numbers within float32 rounding."""
        kernel, bias = self.qkv_dense.kernel, self.qkv_dense.bias  # [H, 3, N, D], [3, N, D]
        hidden, _, heads, size = kernel.shape
        length = ops.shape(x)[1]

        def projected(index, scale=1.0):
            weight = ops.reshape(kernel[:, index], (hidden, heads * size)) * scale
            y = ops.matmul(x, ops.cast(weight, x.dtype)) + ops.cast(
                ops.reshape(bias[index], (heads * size,)) * scale, x.dtype)
            return ops.reshape(y, (-1, length, heads, size))  # [B, S, N, D]

        query, key, value = projected(0, self._scale), projected(1), projected(2)
        context = self._attend_as_matmuls(query, key, value, padding_mask, None)
        output = self.attention_output_dense
        weight = ops.reshape(output.kernel, (heads * size, hidden))
        return ops.matmul(ops.reshape(context, (-1, length, heads * size)),
                          ops.cast(weight, x.dtype)) + ops.cast(output.bias, x.dtype)

    def call(self, inputs, padding_mask=None, training=None, return_attention_scores=False,
             return_attention_probs=False):
        x, internals = self._attention(inputs, padding_mask, training,
                                       return_attention_scores or return_attention_probs)
        x = self._feed_forward(inputs, x, training)
        if not internals:
            return x
        probs, scores = internals
        return (x, *([scores] if return_attention_scores else []),
                *([probs] if return_attention_probs else []))

    def pruning_layout(self):
        """Where each attention head and feed-forward unit sits in this block's weights
        (`encoder_block.PruningLayout`, for `kbert.models.pruning`)."""
        head, unit = ("heads", 0, 1, 1), ("units", 0, 1, 1)
        return encoder_block.PruningLayout(
            {"qkv_dense/kernel": ("heads", 2, 1, 1),  # [H, 3, N, D]
             "qkv_dense/bias": ("heads", 1, 1, 1),  # [3, N, D]
             "attention_output_dense/kernel": head,  # [N, D, H]
             "intermediate_dense/kernel": ("units", 1, 1, 1),
             "intermediate_dense/bias": unit, "output_dense/kernel": unit},
            {"heads": ["attention_output_dense/kernel"], "units": ["output_dense/kernel"]},
            {"heads": [self.num_heads], "units": [self.intermediate_size]})

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return tuple(inputs_shape)
