"""MobileBERT's NoNorm: an elementwise scale and bias in place of LayerNorm."""

import keras
from keras import ops

# MobileBERT's `normalization_type`s: NoNorm (the released model) or LayerNorm.
NORMALIZATION_TYPES = ("no_norm", "layer_norm")


@keras.saving.register_keras_serializable(package="kbert")
class NoNorm(keras.layers.Layer):
    """`x * gamma + beta` over the last axis: no mean, no variance (Sun et al. 2020, sec. 4.1,
    which replaces LayerNorm with it for on-device latency).

    The weights keep LayerNorm's names (`gamma`, `beta`), so that weight decay skips them as it
    skips LayerNorm's, and the original release's `FakeLayerNorm/gamma` maps onto them.

    Call args:
        inputs: float tensor [..., W].

    Returns:
        float tensor of the same shape.
    """

    def build(self, inputs_shape):
        width = inputs_shape[-1]
        self.gamma = self.add_weight(name="gamma", shape=(width,), initializer="ones")
        self.beta = self.add_weight(name="beta", shape=(width,), initializer="zeros")
        self.built = True

    def call(self, inputs):
        return inputs * ops.cast(self.gamma, inputs.dtype) + ops.cast(self.beta, inputs.dtype)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape)


def normalization(normalization_type, epsilon, dtype, name):
    """A `NoNorm` ("no_norm") or a `keras.layers.LayerNormalization` ("layer_norm")."""
    if normalization_type == "no_norm":
        return NoNorm(dtype=dtype, name=name)
    if normalization_type == "layer_norm":
        return keras.layers.LayerNormalization(epsilon=epsilon, dtype=dtype, name=name)
    raise ValueError(f"Unknown normalization_type {normalization_type!r}. Allowed: "
                     f"{', '.join(NORMALIZATION_TYPES)}.")
