"""One MobileBERT block: bottlenecks around attention and a stack of feed-forward networks."""

import keras
from keras import ops

from kbert.layers import _utils
from kbert.layers.encoder_block import EncoderBlock, PruningLayout
from kbert.layers.hash_dropout import HashDropout
from kbert.models.mobile_bert.mobile_bert_embeddings import TORCH_LAYER_NORM_EPSILON
from kbert.models.mobile_bert.no_norm import NORMALIZATION_TYPES, normalization


@keras.saving.register_keras_serializable(package="kbert")
class MobileBertEncoder(EncoderBlock):
    """A MobileBERT block as transformers' `MobileBertLayer` computes it (with
    `use_bottleneck`, `key_query_shared_bottleneck`, not `use_bottleneck_attention`, as in
    the released model):

        b = norm(dense(x))                         input bottleneck, H -> intra
        s = norm(dense(x))                         shared query/key bottleneck, H -> intra
        a = norm(attention(q=s, k=s, v=x) + b)     values from the wide input
        a = norm(ffn(a) + a)                       num_feedforward_networks - 1 times
        o = norm(dense(act(dense(a))) + a)         the last feed-forward network
        y = norm(dropout(dense(o)) + x)            output bottleneck, intra -> H

    Attention runs at the bottleneck width (`intra_bottleneck_size / num_heads` per head);
    attention over the real keys with a float32 softmax (`EncoderBlock._attend`).

    Args:
        num_heads: attention heads; `intra_bottleneck_size` must be divisible by it.
        intermediate_size: feed-forward width.
        intra_bottleneck_size: the width inside the block (128).
        num_feedforward_networks: feed-forward networks per block (4).
        normalization_type: "no_norm" or "layer_norm".
        activation: feed-forward activation (`kbert.layers.ACTIVATION_NAMES`).
        dropout: dropout on the output bottleneck.
        attention_dropout: dropout on the attention probabilities.
        layer_norm_epsilon: epsilon of the LayerNorms (with "layer_norm"; the last
            feed-forward's norm uses torch's default 1e-5, as transformers builds it).
        initializer_range: stddev of the truncated-normal kernel initializer.
        head_size: the width of each head; `None`: `intra_bottleneck_size / num_heads` (a
            pruned block keeps its heads' width with fewer of them).
        feedforward_sizes: each feed-forward network's width where they differ (a pruned
            block's), `num_feedforward_networks` ints; `None`: `intermediate_size` each.

    Call args:
        inputs: float tensor [B, S, H].
        padding_mask: [B, S], 1 for real tokens, 0 for padding; `None` attends to all.

    Returns:
        float tensor [B, S, H].
    """

    def __init__(self, num_heads, intermediate_size, intra_bottleneck_size=128,
                 num_feedforward_networks=4, normalization_type="no_norm", activation="relu",
                 dropout=0.0, attention_dropout=0.1, layer_norm_epsilon=1e-12,
                 initializer_range=0.02, head_size=None, feedforward_sizes=None, **kwargs):
        super().__init__(num_heads, intermediate_size, activation, dropout, attention_dropout,
                         layer_norm_epsilon, initializer_range, head_size, **kwargs)
        if feedforward_sizes is not None:
            _utils.check_positive_int("num_feedforward_networks", num_feedforward_networks)
            if len(feedforward_sizes) != num_feedforward_networks:
                raise ValueError(f"feedforward_sizes={feedforward_sizes!r}: one width per "
                                 f"feed-forward network, {num_feedforward_networks}.")
            feedforward_sizes = [_utils.check_positive_int("feedforward_sizes", size)
                                 for size in feedforward_sizes]
        _utils.keep_settings(self, feedforward_sizes=feedforward_sizes)
        _utils.keep_settings(
            self, intra_bottleneck_size=_utils.check_positive_int("intra_bottleneck_size",
                                                                  intra_bottleneck_size),
            num_feedforward_networks=_utils.check_positive_int("num_feedforward_networks",
                                                               num_feedforward_networks),
            normalization_type=normalization_type)
        if head_size is None and intra_bottleneck_size % num_heads:
            raise ValueError(f"intra_bottleneck_size={intra_bottleneck_size} is not divisible "
                             f"by num_heads={num_heads}.")
        if normalization_type not in NORMALIZATION_TYPES:
            raise ValueError(f"Unknown normalization_type {normalization_type!r}. Allowed: "
                             f"{', '.join(NORMALIZATION_TYPES)}.")

    def _norm(self, name, epsilon=None):
        return normalization(self.normalization_type, epsilon or self.layer_norm_epsilon,
                             self.dtype_policy, name)

    def build(self, inputs_shape, padding_mask_shape=None):
        hidden = inputs_shape[-1]
        inner = self.intra_bottleneck_size
        self._head_size = self._head_size_of(inner)
        heads = self.num_heads * self._head_size
        widths = self._widths()

        # === Layers === (each built on its input width)
        def built(layer, width):
            layer.build((None, None, width))
            return layer

        self.input_bottleneck = built(self._dense(inner, "input_bottleneck"), hidden)
        self.input_bottleneck_norm = built(self._norm("input_bottleneck_norm"), inner)
        self.attention_bottleneck = built(self._dense(inner, "attention_bottleneck"), hidden)
        self.attention_bottleneck_norm = built(self._norm("attention_bottleneck_norm"), inner)
        self.query_dense = built(self._dense(heads, "query"), inner)
        self.key_dense = built(self._dense(heads, "key"), inner)
        self.value_dense = built(self._dense(heads, "value"), hidden)
        self.attention_probs_dropout = HashDropout(self.attention_dropout,
                                                   dtype=self.dtype_policy)
        self.attention_output_dense = built(self._dense(inner, "attention_output_dense"), heads)
        self.attention_norm = built(self._norm("attention_norm"), inner)
        # The first num_feedforward_networks - 1 networks (flat lists: Keras tracks lists).
        stacked = range(self.num_feedforward_networks - 1)
        self.ffn_intermediate = [
            built(self._dense(widths[i], f"ffn_{i}_intermediate", self._activation_fn), inner)
            for i in stacked]
        self.ffn_output = [built(self._dense(inner, f"ffn_{i}_output"), widths[i])
                           for i in stacked]
        self.ffn_norm = [built(self._norm(f"ffn_{i}_norm"), inner) for i in stacked]
        self.intermediate_dense = built(
            self._dense(widths[-1], "intermediate_dense", self._activation_fn), inner)
        self.output_dense = built(self._dense(inner, "output_dense"), widths[-1])
        self.output_norm = built(self._norm("output_norm", TORCH_LAYER_NORM_EPSILON), inner)
        self.output_bottleneck = built(self._dense(hidden, "output_bottleneck"), inner)
        self.output_dropout = HashDropout(self.dropout, dtype=self.dtype_policy)
        self.output_bottleneck_norm = built(self._norm("output_bottleneck_norm"), hidden)
        self.built = True

    def _heads(self, x):
        shape = ops.shape(x)
        return ops.reshape(x, (shape[0], shape[1], self.num_heads, self._head_size))

    def _attention(self, shared, inputs, padding_mask, training, explicit):
        query = self._heads(self.query_dense(shared))  # [B, S, N, D]
        key = self._heads(self.key_dense(shared))
        value = self._heads(self.value_dense(inputs))
        query = query * ops.cast(1.0 / self._head_size**0.5, query.dtype)
        out = self._attend(query, key, value, padding_mask, training, explicit=explicit)
        context, probs = (out[0], out[1]) if explicit else (out, None)
        shape = ops.shape(context)
        return ops.reshape(context, (shape[0], shape[1], self.num_heads * self._head_size)), \
            probs

    def call(self, inputs, padding_mask=None, training=None, return_attention_probs=False):
        bottleneck = self.input_bottleneck_norm(self.input_bottleneck(inputs))  # [B, S, I]
        shared = self.attention_bottleneck_norm(self.attention_bottleneck(inputs))
        context, probs = self._attention(shared, inputs, padding_mask, training,
                                         return_attention_probs)
        x = self.attention_norm(self.attention_output_dense(context) + bottleneck)
        for intermediate, output, norm in zip(self.ffn_intermediate, self.ffn_output,
                                              self.ffn_norm):
            x = norm(output(intermediate(x)) + x)
        x = self.output_norm(self.output_dense(self.intermediate_dense(x)) + x)
        x = self.output_dropout(self.output_bottleneck(x), training=training)
        x = self.output_bottleneck_norm(x + inputs)  # [B, S, H]
        return (x, probs) if return_attention_probs else x

    def _widths(self):
        return self.feedforward_sizes or [self.intermediate_size] * \
            self.num_feedforward_networks

    def pruning_layout(self):
        """Where each head and feed-forward unit sits in this block's weights
        (`encoder_block.PruningLayout`): a head's query, key and value are `head_size`
        columns of their dense layers, its output `head_size` rows; the units are those of
        the feed-forward networks, one network (a run) after another."""
        width = self._head_size
        layout = {f"{name}/kernel": ("heads", 1, 1, width) for name in ("query", "key",
                                                                         "value")}
        layout.update({f"{name}/bias": ("heads", 0, 1, width) for name in ("query", "key",
                                                                           "value")})
        layout["attention_output_dense/kernel"] = ("heads", 0, 1, width)
        names = [(f"ffn_{i}_intermediate", f"ffn_{i}_output")
                 for i in range(self.num_feedforward_networks - 1)]
        names.append(("intermediate_dense", "output_dense"))
        for run, (intermediate, output) in enumerate(names):
            layout.update({f"{intermediate}/kernel": ("units", 1, 1, 1, run),
                           f"{intermediate}/bias": ("units", 0, 1, 1, run),
                           f"{output}/kernel": ("units", 0, 1, 1, run)})
        return PruningLayout(layout, {"heads": ["attention_output_dense/kernel"],
                                      "units": [f"{output}/kernel" for _, output in names]},
                             {"heads": [self.num_heads], "units": list(self._widths())})

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return tuple(inputs_shape)
