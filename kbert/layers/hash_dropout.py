"""Dropout whose mask comes from a counter-based integer hash instead of a Philox stream."""

import keras
from keras import ops

from kbert import _replicas
from kbert.layers import _utils

_GOLDEN = 0x9E3779B9  # Weyl step: spreads consecutive counters over the 32-bit space
_MIX_1 = 0x7FEB352D  # "lowbias32" multipliers (C. Wellons' hash prospector), a
_MIX_2 = 0x846CA68B  # well-mixed 32-bit integer hash with very low avalanche bias


def _hash_bits(shape, seed, row_offset=0):
    """uint32 hash of (element index, seed) for every element of `shape`.

    The element index is built from one small iota per axis, broadcast together, so no
    index tensor of the full size is materialised and XLA fuses the whole mask into its
    consumer. `row_offset` is added to the index along the first axis. Indices wrap modulo
    2**32.
    """
    rank = len(shape)
    index = None
    for axis, size in enumerate(shape):
        iota = ops.cast(ops.arange(size, dtype="int32"), "uint32")
        if axis == 0:
            iota = iota + ops.cast(row_offset, "uint32")
        iota = ops.reshape(iota, [-1 if a == axis else 1 for a in range(rank)])
        index = iota if index is None else index * ops.cast(size, "uint32") + iota
    h = index * ops.cast(_GOLDEN, "uint32") + seed
    h = ops.bitwise_xor(h, ops.right_shift(h, ops.cast(16, "uint32")))
    h = h * ops.cast(_MIX_1, "uint32")
    h = ops.bitwise_xor(h, ops.right_shift(h, ops.cast(15, "uint32")))
    h = h * ops.cast(_MIX_2, "uint32")
    return ops.bitwise_xor(h, ops.right_shift(h, ops.cast(16, "uint32")))


@keras.saving.register_keras_serializable(package="kbert")
class HashDropout(keras.layers.Layer):
    """Inverted dropout, like `keras.layers.Dropout`, with a cheaper random mask.

    Each element is dropped with probability `rate` (to 2**-24) and the rest are scaled by
    1 / (1 - rate). The mask hashes the element's index with a fresh 32-bit seed drawn per
    call from a `keras.random.SeedGenerator`, so it is reproducible under
    `keras.utils.set_random_seed` and new at every step. Why not `keras.layers.Dropout`: its
    Philox draws cost as much as the matmuls of BERT training on a CPU under XLA (a float32
    Philox number per element), while this hash is a few fused integer ops. On bert_mini
    (batch 32, sequence 128, 2 CPU cores) the whole training step is about 1.3x faster.

    Under a tf.distribute strategy every replica draws the same seed, and the first axis is
    taken as the batch, which the strategy splits into contiguous blocks in replica order: the
    index counts rows from the replica's first row in the global batch. So replicas get
    different masks, and N replicas drop exactly what one device drops for the global batch.

    Args:
        rate: fraction of the inputs to drop, in [0, 1).
        seed: optional int seed of the layer's seed generator.

    Call args:
        inputs: any float tensor.
        training: dropout applies only when True.
    """

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = _utils.check_rate("rate", rate)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed) if self.rate > 0 else None
        # Keep when the top 24 bits of the hash are >= rate * 2**24.
        self._threshold = round(self.rate * 2**24)
        self.supports_masking = True
        self.built = True

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        seed = keras.random.randint((), 0, 2**31 - 1, seed=self.seed_generator, dtype="int32")
        shape = ops.shape(inputs)
        replica, _ = _replicas.replica_id_and_count()
        bits = _hash_bits(shape, ops.cast(seed, "uint32"), row_offset=replica * shape[0])
        keep = ops.right_shift(bits, ops.cast(8, "uint32")) >= ops.cast(self._threshold, "uint32")
        scale = ops.cast(1.0 / (1.0 - self.rate), inputs.dtype)
        return ops.where(keep, inputs * scale, ops.zeros_like(inputs))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({"rate": self.rate, "seed": self.seed})
        return config
