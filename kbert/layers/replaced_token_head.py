"""ELECTRA's replaced-token-detection head: one logit per token."""

import keras
from keras import ops

from kbert.layers import _utils


@keras.saving.register_keras_serializable(package="kbert")
class ReplacedTokenHead(keras.layers.Layer):
    """`dense(H) -> activation -> dense(1)` on every token: is it the original or a replacement?

    The discriminator head of ELECTRA (Clark et al. 2020), Hugging Face's
    `ElectraDiscriminatorPredictions`. A positive logit means "replaced".

    Args:
        activation: name of the hidden activation (see `kbert.layers.ACTIVATION_NAMES`).
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        inputs: float tensor [B, S, H], the discriminator's sequence output.

    Returns:
        logits [B, S].
    """

    def __init__(self, activation="gelu_approximate", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.activation = activation
        self._activation_fn = _utils.get_activation(activation)
        self.initializer_range = _utils.check_positive_float(
            "initializer_range", initializer_range
        )

    def build(self, inputs_shape):
        self.dense = keras.layers.Dense(
            inputs_shape[-1],
            activation=self._activation_fn,
            kernel_initializer=_utils.truncated_normal(self.initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )
        self.output_dense = keras.layers.Dense(
            1,
            kernel_initializer=_utils.truncated_normal(self.initializer_range),
            dtype=self.dtype_policy,
            name="output_dense",
        )
        self.dense.build(inputs_shape)
        self.output_dense.build(tuple(inputs_shape[:-1]) + (inputs_shape[-1],))
        self.built = True

    def call(self, inputs):
        return ops.squeeze(self.output_dense(self.dense(inputs)), axis=-1)  # [B, S]

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1])

    def get_config(self):
        config = super().get_config()
        config.update(
            {"activation": self.activation, "initializer_range": self.initializer_range}
        )
        return config
