"""BERT's pooler: a tanh dense layer on the first ([CLS]) token."""

import keras

from kbert.layers import _utils


@keras.saving.register_keras_serializable(package="kbert")
class Pooler(keras.layers.Layer):
    """Takes the first token's vector and applies a tanh dense layer of the same width.

    Args:
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        inputs: float tensor [B, S, H].

    Returns:
        float tensor [B, H].
    """

    def __init__(self, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = _utils.check_positive_float(
            "initializer_range", initializer_range
        )

    def build(self, inputs_shape):
        self.dense = keras.layers.Dense(
            inputs_shape[-1],
            activation="tanh",
            kernel_initializer=_utils.truncated_normal(self.initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )
        self.dense.build((inputs_shape[0], inputs_shape[-1]))
        self.built = True

    def call(self, inputs):
        return self.dense(inputs[:, 0, :])

    def compute_output_shape(self, inputs_shape):
        return (inputs_shape[0], inputs_shape[-1])

    def get_config(self):
        config = super().get_config()
        config["initializer_range"] = self.initializer_range
        return config
