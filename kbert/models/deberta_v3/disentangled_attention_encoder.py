"""DeBERTa's post-LN transformer block with disentangled (content + relative position)
self-attention."""

import math

import keras
from keras import ops

from kbert.layers import _utils
from kbert.layers.encoder_block import EncoderBlock, PruningLayout
from kbert.layers.hash_dropout import HashDropout


def relative_position_indexes(length, position_buckets, max_relative_positions):
    """[S, S] int32: the row of the relative table that query i uses for key j.

    As Hugging Face's `make_log_bucket_position` + the `clamp(... + span)` of its
    `disentangled_attention_bias`: distances i - j within +-position_buckets/2 keep their
    value, longer ones are log-bucketed up to `max_relative_positions`; then shifted by
    `position_buckets` and clipped to the table's 2 * position_buckets rows. Computed in
    float32 as torch does, so that the buckets (a ceil) agree at the boundaries.
    """
    ids = ops.arange(length, dtype="int32")
    relative = ids[:, None] - ids[None, :]  # [S, S]
    mid = position_buckets // 2
    sign = ops.sign(relative)
    absolute = ops.where((relative < mid) & (relative > -mid), mid - 1, ops.abs(relative))
    ratio = ops.log(ops.cast(absolute, "float32") / float(mid))
    denominator = ops.log(ops.cast((max_relative_positions - 1) / mid, "float32"))
    log_position = ops.ceil(ratio / denominator * float(mid - 1)) + float(mid)
    bucket = ops.where(absolute <= mid, ops.cast(relative, "float32"),
                       log_position * ops.cast(sign, "float32"))
    index = ops.cast(bucket, "int32") + position_buckets
    return ops.clip(index, 0, 2 * position_buckets - 1)


@keras.saving.register_keras_serializable(package="kbert")
class DisentangledAttentionEncoder(EncoderBlock):
    """Disentangled self-attention and a feed-forward network, each followed by dropout,
    residual and LayerNorm (Hugging Face's `DebertaV2Layer` with `share_att_key=True`).

    Attention scores are `(q_i.k_j + q_i.Kr[d(i,j)] + k_j.Qr[d(i,j)]) / sqrt(3 * head_size)`:
    content-to-content, content-to-position ("c2p") and position-to-content ("p2c"), where
    `Qr`, `Kr` are the layer's query and key projections of the (shared, normalized) relative
    embeddings and `d(i, j)` the bucketed relative distance (`relative_position_indexes`).

    Args:
        num_heads, intermediate_size, activation, dropout, attention_dropout,
            layer_norm_epsilon, initializer_range: as `kbert.layers.TransformerEncoder`.
        position_buckets: the relative table has 2 * position_buckets rows.
        max_relative_positions: the distance the log buckets reach.
        attention_types: the position terms, a subset of ("c2p", "p2c").
        head_size: the width of each head; `None`: input width / `num_heads` (a pruned
            block keeps its heads' width with fewer of them).

    Call args:
        inputs: float [B, S, H].
        relative_embeddings: float [2 * position_buckets, H], already normalized.
        padding_mask: [B, S], 1 for real tokens; `None` attends to all.

    Returns:
        float [B, S, H].
    """

    def __init__(self, num_heads, intermediate_size, activation="gelu", dropout=0.1,
                 attention_dropout=0.1, layer_norm_epsilon=1e-7, initializer_range=0.02,
                 position_buckets=256, max_relative_positions=512,
                 attention_types=("c2p", "p2c"), head_size=None, **kwargs):
        super().__init__(num_heads, intermediate_size, activation, dropout, attention_dropout,
                         layer_norm_epsilon, initializer_range, head_size, **kwargs)
        _utils.keep_settings(
            self, position_buckets=_utils.check_positive_int("position_buckets", position_buckets),
            max_relative_positions=_utils.check_positive_int("max_relative_positions",
                                                             max_relative_positions),
            attention_types=tuple(attention_types))

    def build(self, inputs_shape, relative_embeddings_shape=None, padding_mask_shape=None):
        hidden_size = inputs_shape[-1]
        self._width = self._head_size_of(hidden_size)
        policy = self.dtype_policy
        dense = self._dense
        heads = self.num_heads * self._width

        # === Layers ===
        self.query_dense = dense(heads, "query_dense")
        self.key_dense = dense(heads, "key_dense")
        self.value_dense = dense(heads, "value_dense")
        self.attention_output_dense = dense(hidden_size, "attention_output_dense")
        self.position_dropout = HashDropout(self.dropout, dtype=policy)
        self.attention_probs_dropout = HashDropout(self.attention_dropout, dtype=policy)
        self.attention_output_dropout = HashDropout(self.dropout, dtype=policy)
        self.attention_layer_norm = self._layer_norm("attention_layer_norm")
        self.intermediate_dense = dense(self.intermediate_size, "intermediate_dense",
                                        self._activation_fn)
        self.output_dense = dense(hidden_size, "output_dense")
        self.output_dropout = HashDropout(self.dropout, dtype=policy)
        self.output_layer_norm = self._layer_norm("output_layer_norm")

        shape = tuple(inputs_shape)
        for layer in (self.query_dense, self.key_dense, self.value_dense,
                      self.attention_layer_norm, self.intermediate_dense,
                      self.output_layer_norm):
            layer.build(shape)
        self.attention_output_dense.build(shape[:-1] + (heads,))
        self.output_dense.build(shape[:-1] + (self.intermediate_size,))
        self.built = True

    def _heads(self, x):
        """[..., H] -> [..., N, D]."""
        shape = ops.shape(x)
        return ops.reshape(x, tuple(shape[:-1]) + (self.num_heads, self._width))

    def _attention(self, x, relative_embeddings, padding_mask, training, explicit):
        query = self._heads(self.query_dense(x))  # [B, S, N, D]
        key = self._heads(self.key_dense(x))
        value = self._heads(self.value_dense(x))
        scale = ops.cast(1.0 / math.sqrt(self._width * (1 + len(self.attention_types))),
                         query.dtype)
        bias = None  # the c2p and p2c scores, added to the content's
        if self.attention_types:
            bias = self._relative_scores(query, key, relative_embeddings, scale, training)
        out = self._attend(query, key * scale, value, padding_mask, training, bias=bias,
                           explicit=explicit)
        context, probs = (out[0], out[1]) if explicit else (out, None)
        shape = ops.shape(context)
        context = ops.reshape(context, (shape[0], shape[1], self.num_heads * self._width))
        return self.attention_output_dense(context), probs  # [B, S, H]

    def _relative_scores(self, query, key, relative_embeddings, scale, training):
        """The c2p and p2c terms, [B, N, S, S]."""
        relative = ops.cast(relative_embeddings, query.dtype)
        relative = self.position_dropout(relative, training=training)  # [2P, H]
        length = ops.shape(query)[1]
        index = relative_position_indexes(length, self.position_buckets,
                                          self.max_relative_positions)  # [S, S]
        batch = ops.shape(query)[0]
        target = (batch, self.num_heads, length, length)
        result = 0
        if "c2p" in self.attention_types:
            position_key = self._heads(self.key_dense(relative))  # [2P, N, D]
            c2p = ops.einsum("bqnd,rnd->bnqr", query, position_key * scale)  # [B, N, S, 2P]
            result = result + ops.take_along_axis(
                c2p, ops.broadcast_to(index[None, None], target), axis=3)
        if "p2c" in self.attention_types:
            position_query = self._heads(self.query_dense(relative))  # [2P, N, D]
            p2c = ops.einsum("bknd,rnd->bnkr", key, position_query * scale)  # [B, N, S, 2P]
            # Key j reads row d(i, j) for query i: gather with the transposed index.
            p2c = ops.take_along_axis(
                p2c, ops.broadcast_to(ops.transpose(index)[None, None], target), axis=3)
            result = result + ops.transpose(p2c, (0, 1, 3, 2))
        return result

    def call(self, inputs, relative_embeddings, padding_mask=None, training=None,
             return_attention_probs=False):
        x, probs = self._attention(inputs, relative_embeddings, padding_mask, training,
                                   return_attention_probs)
        x = self._feed_forward(inputs, x, training)
        return (x, probs) if return_attention_probs else x

    def pruning_layout(self):
        """Where each head and feed-forward unit sits in this block's weights
        (`encoder_block.PruningLayout`): a head's query, key and value are `head_size`
        columns of their own dense layers, its output `head_size` rows."""
        names = ("query_dense", "key_dense", "value_dense")
        layout = {f"{name}/kernel": ("heads", 1, 1, self._width) for name in names}
        layout.update({f"{name}/bias": ("heads", 0, 1, self._width) for name in names})
        layout.update({"attention_output_dense/kernel": ("heads", 0, 1, self._width),
                       "intermediate_dense/kernel": ("units", 1, 1, 1),
                       "intermediate_dense/bias": ("units", 0, 1, 1),
                       "output_dense/kernel": ("units", 0, 1, 1)})
        return PruningLayout(layout, {"heads": ["attention_output_dense/kernel"],
                                      "units": ["output_dense/kernel"]},
                             {"heads": [self.num_heads], "units": [self.intermediate_size]})

    def compute_output_shape(self, inputs_shape, relative_embeddings_shape=None,
                             padding_mask_shape=None):
        return tuple(inputs_shape)

    def get_config(self):
        return {**super().get_config(), "attention_types": list(self.attention_types)}
