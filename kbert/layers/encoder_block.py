"""What every kbert transformer block shares: its settings, its kernels, its attention."""

import contextlib
import threading

import keras
import numpy as np
from keras import ops

from kbert.layers import _utils, query_blocks

_form = threading.local()


@contextlib.contextmanager
def attention_as_matmuls():
    """Within it, inference attention traced by this thread is written as transposes to [B,
    N, S, D], two 4-D matmuls and a float32 softmax (the explicit path's numbers), instead of
    `keras.ops.dot_product_attention`: for a graph another runtime runs. tf2onnx writes
    TensorFlow's `dot_product_attention` (5-D einsums, for grouped queries) as 5-D transposes,
    reshapes and slices that took ONNX Runtime 4x the time of a PyTorch export's attention
    transposes (all-MiniLM-L6-v2, batch 32 of 28 tokens); its matmuls are one kernel each
    (`kbert.serving.onnx`). No query blocks: the whole matrix, as an export keeps."""
    before = getattr(_form, "matmuls", False)
    _form.matmuls = True
    try:
        yield
    finally:
        _form.matmuls = before


def exporting_as_matmuls():
    """Whether this thread is tracing inside `attention_as_matmuls` (a block may write its
    projections for the other runtime too: `TransformerEncoder`'s three matmuls)."""
    return getattr(_form, "matmuls", False)


def _biased(scores, bias, padding_mask):
    """float32 `scores` [B, N, S, S] with `bias` added and the padded keys (`padding_mask` [B,
    S] 0) at -1e9, so that exp() of them is exactly 0 (None: neither)."""
    if bias is not None:
        scores = scores + ops.cast(bias, "float32")
    if padding_mask is not None:
        padding = (1.0 - ops.cast(padding_mask, "float32")) * -1e9  # [B, S] over the keys
        scores = scores + padding[:, None, None, :]
    return scores


class PruningLayout:
    """Where each attention head and feed-forward unit sits in a block's weights, for
    structured pruning (`kbert.models.pruning`; a block's `pruning_layout()`).

    Args:
        weights: {weight path inside the block: (part, axis, repeats, width[, run])}: `part`
            is "heads" or "units"; along `axis` the weight holds `repeats` copies of the
            layout (ModernBERT's fused query, key and value, one after another), each one
            `width`-wide slice per part of run `run` (0).
        outputs: {part: [weight paths]}: the weights whose rows (axis 0) are each part's
            share of the block's output: masking them to zero is removing the part.
        runs: {part: [sizes]}: a part's index space, one run after another (MobileBERT's
            feed-forward networks; one run elsewhere).
    """

    def __init__(self, weights, outputs, runs):
        self.weights = {key: tuple(entry) + (0,) * (5 - len(entry))
                        for key, entry in weights.items()}
        self.outputs, self.runs = outputs, runs

    def count(self, part):
        """How many heads or units (`part`) the block has."""
        return sum(self.runs[part])

    def _in_run(self, part, run, parts):
        start = sum(self.runs[part][:run])
        parts = np.asarray(parts, np.int64)
        return parts[(parts >= start) & (parts < start + self.runs[part][run])] - start

    def positions(self, key, parts):
        """The positions along weight `key`'s axis of the parts `parts` (indices of the
        block's), as an int array."""
        part, _, repeats, width, run = self.weights[key]
        count = self.runs[part][run]
        parts = self._in_run(part, run, parts)
        slices = (parts[:, None] * width + np.arange(width)[None]).reshape(-1)
        return (np.arange(repeats)[:, None] * count * width + slices[None]).reshape(-1)

    def sizes(self, part, kept):
        """How many of `kept` (indices) fall in each run of `part`: an int where it has one
        run, else a tuple."""
        sizes = tuple(len(self._in_run(part, run, kept))
                      for run in range(len(self.runs[part])))
        return sizes[0] if len(sizes) == 1 else sizes


class EncoderBlock(_utils.SettingsConfig, keras.layers.Layer):
    """The base of the transformer blocks (`TransformerEncoder`, DeBERTa-v3's
    `DisentangledAttentionEncoder`, MobileBERT's `MobileBertEncoder`): the settings every
    block has, checked and saved (`get_config`) in one place, its dense layers' initializer,
    and scaled dot-product attention over the real keys (`_attend`: fused where it can be).

    A block builds `attention_probs_dropout` (a dropout on the attention probabilities) and
    its own layers in `build`.

    Args:
        num_heads, intermediate_size, activation, dropout, attention_dropout,
            layer_norm_epsilon, initializer_range, head_size: as `TransformerEncoder`.
    """

    def __init__(self, num_heads, intermediate_size, activation, dropout, attention_dropout,
                 layer_norm_epsilon, initializer_range, head_size=None, **kwargs):
        super().__init__(**kwargs)
        if head_size is not None:
            _utils.check_positive_int("head_size", head_size)
        _utils.keep_settings(
            self, num_heads=num_heads, intermediate_size=intermediate_size,
            activation=activation, dropout=dropout, attention_dropout=attention_dropout,
            layer_norm_epsilon=layer_norm_epsilon, initializer_range=initializer_range,
            head_size=head_size)

    def compute_output_spec(self, inputs, *args, return_attention_scores=False,
                            return_attention_probs=False, **kwargs):
        """[B, S, H] in the compute dtype; with `return_attention_scores` and/or
        `return_attention_probs` (a block's `call` takes those it has), also the float32
        scores and/or the probabilities, [B, N, S, S], in that order."""
        x = keras.KerasTensor(inputs.shape, dtype=self.compute_dtype)
        square = (inputs.shape[0], self.num_heads, inputs.shape[1], inputs.shape[1])
        extra = ([keras.KerasTensor(square, dtype="float32")] if return_attention_scores
                 else []) + ([keras.KerasTensor(square, dtype=self.compute_dtype)]
                             if return_attention_probs else [])
        return (x, *extra) if extra else x

    def _dense(self, units, name, activation=None, use_bias=True):
        """A `Dense(units)` with the blocks' truncated-normal kernel initializer."""
        return keras.layers.Dense(
            units, activation=activation, use_bias=use_bias,
            kernel_initializer=_utils.truncated_normal(self.initializer_range),
            dtype=self.dtype_policy, name=name)

    def _layer_norm(self, name, center=True):
        return keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon, center=center,
                                               dtype=self.dtype_policy, name=name)

    def _head_size_of(self, hidden_size):
        """The width of each head: `head_size` where given (a pruned block keeps its heads'
        width with fewer of them), else `hidden_size / num_heads`."""
        if self.head_size is not None:
            return self.head_size
        if hidden_size % self.num_heads:
            raise ValueError(
                f"The hidden size {hidden_size} is not divisible by num_heads={self.num_heads}."
            )
        return hidden_size // self.num_heads

    def _attend(self, query, key, value, padding_mask, training, bias=None, explicit=False):
        """Scaled dot-product attention of `query` (already scaled) over `key` and `value`
        [B, S, N, D], with `bias` [B, N, S, S] (or `None`) added to the scores and the padded
        keys (`padding_mask` [B, S] 0, or `None`: none) left out. The softmax runs in float32
        even under a mixed-precision policy.

        Through `keras.ops.dot_product_attention` (a fused kernel where the backend has one:
        cuDNN's under JAX on a GPU), unless the probabilities are needed: for dropout on them
        (`training` with `attention_dropout`), or `explicit` (to return them). The explicit
        path is the same computation written out: padded keys at -1e9 so that exp() of them
        is exactly 0. Without a `bias` and outside training, a batch whose B x S x S reaches
        `query_blocks.LONG` squared (one sequence of 1,024 tokens) runs in blocks of queries,
        one after another (`query_blocks`: memory linear in S).

        Returns: the context [B, S, N, D]; with `explicit`, (the context, the probabilities
            [B, N, S, S] in the query's dtype before dropout, the float32 scores before the
            softmax with the padding's -1e9).
        """
        if not explicit and not (training and self.attention_dropout):
            if exporting_as_matmuls():
                return self._attend_as_matmuls(query, key, value, padding_mask, bias)
            mask = None
            if padding_mask is not None:
                mask = ops.cast(padding_mask, "bool")[:, None, None, :]  # [B, 1, 1, S]
            if bias is not None:
                return ops.dot_product_attention(query, key, value, bias=bias, mask=mask,
                                                 scale=1.0)
            if training:
                return ops.dot_product_attention(query, key, value, mask=mask, scale=1.0)
            # Inference on long sequences in blocks of queries (`query_blocks`): never the
            # whole [S, S].
            return query_blocks.by_length(
                lambda rows: ops.dot_product_attention(rows, key, value, mask=mask, scale=1.0),
                query)
        scores = ops.cast(ops.einsum("bqnd,bknd->bnqk", query, key), "float32")  # [B, N, S, S]
        scores = _biased(scores, bias, padding_mask)
        probs = ops.cast(ops.softmax(scores, axis=-1), value.dtype)
        dropped = self.attention_probs_dropout(probs, training=training)
        context = ops.einsum("bnqk,bknd->bqnd", dropped, value)  # [B, S, N, D]
        return (context, probs, scores) if explicit else context

    def _attend_as_matmuls(self, query, key, value, padding_mask, bias):
        """`_attend`'s inference under `attention_as_matmuls`: [B, S, N, D] in and out."""
        scores = ops.matmul(ops.transpose(query, (0, 2, 1, 3)),
                            ops.transpose(key, (0, 2, 3, 1)))  # [B, N, S, S]
        scores = _biased(ops.cast(scores, "float32"), bias, padding_mask)
        probs = ops.cast(ops.softmax(scores, axis=-1), value.dtype)
        context = ops.matmul(probs, ops.transpose(value, (0, 2, 1, 3)))  # [B, N, S, D]
        return ops.transpose(context, (0, 2, 1, 3))

    def _feed_forward(self, inputs, attention, training):
        """BERT's post-LN ending (`TransformerEncoder`, DeBERTa-v3's block): dropout, residual
        and LayerNorm on `attention` [B, S, H], then the feed-forward network and the same.
        Outside training, a batch whose B x S x S reaches `query_blocks.LONG` squared runs
        the feed-forward network in blocks of positions (`query_blocks.by_length`: the [B, S,
        intermediate_size] activations a block at a time; it is position-wise, so the numbers
        are the same), as BERT's attention runs in blocks of queries there (DeBERTa-v3's, with
        its position bias, keeps the whole matrix)."""
        x = self.attention_output_dropout(attention, training=training)
        x = self.attention_layer_norm(x + inputs)
        residual = x
        network = lambda rows: self.output_dense(self.intermediate_dense(rows))  # noqa: E731
        x = network(x) if training else query_blocks.by_length(network, x)
        x = self.output_dropout(x, training=training)
        return self.output_layer_norm(x + residual)
