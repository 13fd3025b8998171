"""The layers of the task heads that Keras does not have: transformers' ELECTRA classification
head and sentence pooling (extractive QA's span logits are its own,
`kbert.tasks.question_answering.model.SpanLogits`)."""

import keras
from keras import ops

from kbert.layers import _utils

# What a padded position gets: it never wins an argmax and has no softmax mass. Applied in
# float32, where exp(-1e9 - max) is exactly 0 (sentence-transformers' max pooling uses it too).
LARGE_NEGATIVE = -1e9
POOLINGS = ("mean", "cls", "max")


@keras.saving.register_keras_serializable(package="kbert")
class ClassificationHead(keras.layers.Layer):
    """[CLS] hidden -> dropout -> dense(H) -> activation -> dropout -> dense(num_classes).

    transformers' `ElectraClassificationHead` (RoBERTa's head with GELU): one dropout used
    twice, `dense` and `out_proj`, so that fine-tuned weights map one to one.

    Args:
        num_classes: number of logits.
        dropout: rate of both dropouts.
        activation: a `kbert.layers.ACTIVATION_NAMES` name; ELECTRA's is the exact "gelu".
        initializer_range: stddev of the truncated-normal kernel initializers.

    Call args:
        inputs: float tensor [B, S, H], the sequence output.

    Returns:
        logits [B, num_classes].
    """

    def __init__(self, num_classes, dropout=0.1, activation="gelu", initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.num_classes = _utils.check_positive_int("num_classes", num_classes)
        self.dropout = _utils.check_rate("dropout", dropout)
        self.activation = activation
        self._activation_fn = _utils.get_activation(activation)
        self.initializer_range = _utils.check_positive_float(
            "initializer_range", initializer_range
        )
        self.dropout_layer = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy,
                                                  name="dropout")
        self.out_proj = keras.layers.Dense(
            num_classes, kernel_initializer=_utils.truncated_normal(self.initializer_range),
            dtype=self.dtype_policy, name="out_proj",
        )

    def build(self, inputs_shape):
        hidden = inputs_shape[-1]
        self.dense = keras.layers.Dense(
            hidden, activation=self._activation_fn,
            kernel_initializer=_utils.truncated_normal(self.initializer_range),
            dtype=self.dtype_policy, name="dense",
        )
        self.dense.build((inputs_shape[0], hidden))
        self.out_proj.build((inputs_shape[0], hidden))
        self.built = True

    def call(self, inputs, training=None):
        x = self.dropout_layer(inputs[:, 0, :], training=training)  # [B, H]
        x = self.dense(x)
        x = self.dropout_layer(x, training=training)
        return self.out_proj(x)  # [B, N]

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], self.num_classes)

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "activation": self.activation,
            "initializer_range": self.initializer_range,
        })
        return config


@keras.saving.register_keras_serializable(package="kbert")
class TokenPooling(keras.layers.Layer):
    """One vector per sequence, as sentence-transformers' `Pooling` (+ `Normalize`) modules.

    Args:
        pooling: "mean" (over the real tokens), "cls" (the first token) or "max" (over the
            real tokens; padding set to -1e9 first, as sentence-transformers does).
        normalize: divide by the L2 norm (at least 1e-12, as torch's F.normalize).

    Call args:
        inputs: float tensor [B, S, H].
        padding_mask: int or bool tensor [B, S], 1 for real tokens ("cls" does not read it).

    Returns:
        float32 tensor [B, H]: the sums run in float32 also under mixed precision.
    """

    def __init__(self, pooling="mean", normalize=False, **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"Unknown pooling {pooling!r}. Allowed: {', '.join(POOLINGS)}.")
        self.pooling = pooling
        self.normalize = bool(normalize)

    def call(self, inputs, padding_mask=None):
        x = ops.cast(inputs, "float32")  # [B, S, H]
        if self.pooling == "cls":
            pooled = x[:, 0, :]
        else:
            mask = ops.cast(padding_mask, "float32")[:, :, None]  # [B, S, 1]
            if self.pooling == "mean":
                # sentence-transformers clamps the token count at 1e-9: an all-padding row is 0.
                pooled = ops.sum(x * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1e-9)
            else:
                pooled = ops.max(ops.where(mask > 0, x, LARGE_NEGATIVE), axis=1)
        if self.normalize:
            norm = ops.sqrt(ops.sum(ops.square(pooled), axis=-1, keepdims=True))
            pooled = pooled / ops.maximum(norm, 1e-12)
        return pooled  # [B, H]

    def compute_output_spec(self, inputs, padding_mask=None):
        return keras.KerasTensor((inputs.shape[0], inputs.shape[-1]), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update({"pooling": self.pooling, "normalize": self.normalize})
        return config
