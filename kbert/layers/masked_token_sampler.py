"""ELECTRA's corruption step: sample replacements for the masked positions from a generator."""

import keras
from keras import ops

from kbert.layers import _utils


def scatter_positions(token_ids, positions, values):
    """`token_ids` [B, S] with `values` [B, P] written at `positions` [B, P].

    Position 0 ([CLS]) is never written: padded prediction slots point there, as in
    google-research/bert's features (ELECTRA's `scatter_update` skips it for the same reason).
    Positions within a row must be distinct, as the masking pipeline makes them.
    """
    sequence_length = ops.shape(token_ids)[1]
    positions = ops.cast(positions, "int32")
    hits = ops.equal(positions[:, :, None], ops.arange(sequence_length, dtype="int32")[None, None])
    hits = ops.logical_and(hits, ops.greater(positions, 0)[:, :, None])  # [B, P, S]
    hits = ops.cast(hits, "int32")
    written = ops.max(hits, axis=1)  # [B, S]
    new_values = ops.sum(hits * ops.cast(values, "int32")[:, :, None], axis=1)  # [B, S]
    return ops.cast(token_ids, "int32") * (1 - written) + new_values


@keras.saving.register_keras_serializable(package="kbert")
class MaskedTokenSampler(keras.layers.Layer):
    """Samples a token from the generator's softmax at each masked position and writes it in.

    No gradient flows through the sampling (as in ELECTRA: the generator learns from its own
    masked-LM loss only). The sample may equal the original token; the loss then counts that
    position as original, not replaced.

    Args:
        temperature: the logits are divided by it before sampling (ELECTRA uses 1.0).
        seed: seed of the sampling.

    Call args:
        token_ids: int tensor [B, S], the masked input.
        mask_positions: int tensor [B, P].
        logits: float tensor [B, P, V], the generator's logits at those positions.

    Returns:
        (replaced_token_ids int32 [B, S], sampled_ids int32 [B, P]).
    """

    def __init__(self, temperature=1.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.temperature = _utils.check_positive_float("temperature", temperature)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, token_ids, mask_positions, logits):
        logits = ops.stop_gradient(ops.cast(logits, "float32")) / self.temperature
        batch, predictions = ops.shape(logits)[0], ops.shape(logits)[1]
        flat = ops.reshape(logits, (-1, ops.shape(logits)[-1]))  # [B * P, V]
        sampled = keras.random.categorical(flat, 1, seed=self.seed_generator, dtype="int32")
        sampled = ops.reshape(sampled, (batch, predictions))  # [B, P]
        return scatter_positions(token_ids, mask_positions, sampled), sampled

    def compute_output_spec(self, token_ids, mask_positions, logits):
        return (keras.KerasTensor(token_ids.shape, dtype="int32"),
                keras.KerasTensor(mask_positions.shape, dtype="int32"))

    def get_config(self):
        config = super().get_config()
        config.update({"temperature": self.temperature, "seed": self.seed})
        return config
