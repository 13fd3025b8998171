"""ModernBERT's pre-LayerNorm block: rotary attention (global or a sliding window) and a
GeGLU feed-forward network."""

import keras
from keras import ops

from kbert.layers import _utils
from kbert.layers.encoder_block import EncoderBlock, PruningLayout
from kbert.layers.hash_dropout import HashDropout
from kbert.models.modern_bert import modern_bert_attention as attention


@keras.saving.register_keras_serializable(package="kbert")
class ModernBertEncoder(EncoderBlock):
    """One layer of transformers' `ModernBertEncoderLayer`:

        x = x + dropout(Wo(attention(rotary(Wqkv(attention_norm(x))))))
        x = x + mlp_output(dropout(activation(input) * gate)),
            (input, gate) = mlp_input(mlp_norm(x))

    Attention is global (`window_radius=None`: through `EncoderBlock._attend`, i.e.
    `keras.ops.dot_product_attention`) or a sliding window (query i sees the keys j with
    |i - j| <= `window_radius`, computed in chunks: linear in the sequence,
    `modern_bert_attention.windowed_attention`). The first layer has no `attention_norm`
    (the embeddings' LayerNorm precedes it).

    Args:
        num_heads, intermediate_size (the GeGLU's gated half: `mlp_input` is twice as wide),
            activation, dropout (the feed-forward's), attention_dropout (on the
            probabilities and on the attention output), layer_norm_epsilon,
            initializer_range: as `ModernBertConfig`.
        norm_bias, attention_bias, mlp_bias: whether the LayerNorms, the attention's and the
            feed-forward's dense layers have biases.
        rope_theta: the rotary base.
        window_radius: `None` (global attention) or how far the window reaches each side.
        attention_norm: whether the block normalizes its input before attention.
        head_size: the width of each head; `None`: input width / `num_heads` (a pruned
            block keeps its heads' width with fewer of them).

    Call args:
        inputs: float [B, S, H].
        padding_mask: [B, S], 1 for real tokens; `None` attends to all.
        document_ids: int [B, S] or `None`: packed documents (a run of equal ids is one
            document), as ModernBERT's unpadded packed training: a token attends only to its
            own document's (also in the window) and its rotary position counts from its
            document's first token. `None`: one sequence a row, positions 0, 1, ...
        return_attention_probs: also return the probabilities [B, N, S, S] (computed whole,
            with the window as a mask: for inspection, not for long inputs).
    """

    def __init__(self, num_heads, intermediate_size, activation="gelu", dropout=0.0,
                 attention_dropout=0.0, layer_norm_epsilon=1e-5, initializer_range=0.02,
                 norm_bias=False, attention_bias=False, mlp_bias=False,
                 rope_theta=160000.0, window_radius=None, attention_norm=True, head_size=None,
                 **kwargs):
        super().__init__(num_heads, intermediate_size, activation, dropout, attention_dropout,
                         layer_norm_epsilon, initializer_range, head_size, **kwargs)
        if window_radius is not None:
            _utils.check_positive_int("window_radius", window_radius)
        _utils.keep_settings(self, norm_bias=bool(norm_bias),
                             attention_bias=bool(attention_bias), mlp_bias=bool(mlp_bias),
                             rope_theta=_utils.check_positive_float("rope_theta", rope_theta),
                             window_radius=window_radius, attention_norm=bool(attention_norm))

    def _linear(self, units, use_bias, name):
        return self._dense(units, name, use_bias=use_bias)

    def _norm(self, name):
        return self._layer_norm(name, center=self.norm_bias)

    def build(self, inputs_shape, padding_mask_shape=None, document_ids_shape=None):
        hidden_size = inputs_shape[-1]
        self._width = self._head_size_of(hidden_size)
        heads = self.num_heads * self._width
        policy = self.dtype_policy
        self.attention_layer_norm = (self._norm("attention_layer_norm")
                                     if self.attention_norm else None)
        self.qkv_dense = self._linear(3 * heads, self.attention_bias, "qkv_dense")
        self.attention_output_dense = self._linear(hidden_size, self.attention_bias,
                                                   "attention_output_dense")
        self.attention_probs_dropout = HashDropout(self.attention_dropout, dtype=policy)
        self.attention_output_dropout = HashDropout(self.attention_dropout, dtype=policy)
        self.mlp_layer_norm = self._norm("mlp_layer_norm")
        self.mlp_input_dense = self._linear(2 * self.intermediate_size, self.mlp_bias,
                                            "mlp_input_dense")
        self.mlp_dropout = HashDropout(self.dropout, dtype=policy)
        self.mlp_output_dense = self._linear(hidden_size, self.mlp_bias, "mlp_output_dense")

        shape = tuple(inputs_shape)
        for layer in (self.attention_layer_norm, self.qkv_dense, self.mlp_layer_norm,
                      self.mlp_input_dense):
            if layer is not None:
                layer.build(shape)
        self.attention_output_dense.build(shape[:-1] + (heads,))
        self.mlp_output_dense.build(shape[:-1] + (self.intermediate_size,))
        self.built = True

    def _attention(self, x, padding_mask, document_ids, training, explicit):
        if self.attention_layer_norm is not None:
            x = self.attention_layer_norm(x)
        qkv = self.qkv_dense(x)  # [B, S, 3H]
        shape = ops.shape(qkv)
        qkv = ops.reshape(qkv, (shape[0], shape[1], 3, self.num_heads, self._width))
        runs = positions = None
        if document_ids is not None:
            runs, positions = attention.document_runs(document_ids)  # [B, S] each
        query = attention.rotary(qkv[:, :, 0], self.rope_theta, positions)
        key = attention.rotary(qkv[:, :, 1], self.rope_theta, positions)
        query = query * ops.cast(self._width ** -0.5, query.dtype)
        value, probs = qkv[:, :, 2], None
        if (not explicit and not training and self.window_radius is None
                and runs is not None):
            # Inference of a global layer over packed documents: the same-document bias of
            # one block of queries at a time (never the whole [B, 1, S, S] of
            # `document_bias`).
            context = attention.global_attention(self._attend, query, key, value,
                                                 padding_mask, training, runs)
        elif explicit or self.window_radius is None:
            bias = None
            if self.window_radius is not None:
                bias = attention.window_bias(shape[1], self.window_radius)[None, None]
            if runs is not None:
                bias = attention.document_bias(
                    runs, None if bias is None else ops.equal(bias[0, 0], 0.0))
            out = self._attend(query, key, value, padding_mask, training, bias=bias,
                               explicit=explicit)
            context, probs = (out[0], out[1]) if explicit else (out, None)
        else:
            context = attention.windowed_attention(self._attend, query, key, value,
                                                   padding_mask, self.window_radius, training,
                                                   runs=runs)
        context = ops.reshape(context, (shape[0], shape[1], self.num_heads * self._width))
        x = self.attention_output_dense(context)
        return self.attention_output_dropout(x, training=training), probs  # [B, S, H]

    def _gated_feed_forward(self, x, training):
        gated = self.mlp_input_dense(self.mlp_layer_norm(x))  # [B, S, 2I]
        inputs, gate = gated[..., :self.intermediate_size], gated[..., self.intermediate_size:]
        x = self.mlp_dropout(self._activation_fn(inputs) * gate, training=training)
        return self.mlp_output_dense(x)

    def call(self, inputs, padding_mask=None, document_ids=None, training=None,
             return_attention_probs=False):
        x, probs = self._attention(inputs, padding_mask, document_ids, training,
                                   return_attention_probs)
        x = inputs + x
        x = x + self._gated_feed_forward(x, training)
        return (x, probs) if return_attention_probs else x

    def pruning_layout(self):
        """Where each head and feed-forward unit sits in this block's weights
        (`encoder_block.PruningLayout`): a head's query, key and value are three runs of
        `head_size` columns of the fused projection, a unit's input and gate two columns of
        `mlp_input_dense`."""
        layout = {"qkv_dense/kernel": ("heads", 1, 3, self._width),
                  "attention_output_dense/kernel": ("heads", 0, 1, self._width),
                  "mlp_input_dense/kernel": ("units", 1, 2, 1),
                  "mlp_output_dense/kernel": ("units", 0, 1, 1)}
        if self.attention_bias:
            layout["qkv_dense/bias"] = ("heads", 0, 3, self._width)
        if self.mlp_bias:
            layout["mlp_input_dense/bias"] = ("units", 0, 2, 1)
        return PruningLayout(layout, {"heads": ["attention_output_dense/kernel"],
                                      "units": ["mlp_output_dense/kernel"]},
                             {"heads": [self.num_heads], "units": [self.intermediate_size]})

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None,
                             document_ids_shape=None):
        return tuple(inputs_shape)
