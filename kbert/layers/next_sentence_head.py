"""Next-sentence (and sentence-order) prediction head."""

import keras

from kbert.layers import _utils


@keras.saving.register_keras_serializable(package="kbert")
class NextSentenceHead(keras.layers.Layer):
    """A dense layer from the pooled output to 2 logits (0: B follows A, 1: B is random).

    ALBERT's sentence-order prediction uses the same head (0: in order, 1: swapped).

    Args:
        num_classes: number of logits, 2 for NSP and SOP.
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        inputs: float tensor [B, H], the pooled output.

    Returns:
        logits [B, num_classes].
    """

    def __init__(self, num_classes=2, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_classes = _utils.check_positive_int("num_classes", num_classes)
        self.initializer_range = _utils.check_positive_float(
            "initializer_range", initializer_range
        )
        self.dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=_utils.truncated_normal(initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )

    def build(self, inputs_shape):
        self.dense.build(inputs_shape)
        self.built = True

    def call(self, inputs):
        return self.dense(inputs)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1]) + (self.num_classes,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {"num_classes": self.num_classes, "initializer_range": self.initializer_range}
        )
        return config
