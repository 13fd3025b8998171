"""LoRA (Hu et al., 2021) on kbert's encoder: frozen dense kernels W, and a trained low-rank
update, W + (alpha / rank) A B.

Keras' `enable_lora` gives a layer A [kernel axes but the last..., rank] and B [rank, last
axis]: right for a `Dense` kernel [in, out], not for kbert's fused attention projection,
whose `EinsumDense` kernel is [hidden, 3, heads, head_size] (q, k and v at once): Keras' A
would be [hidden, 3, heads, rank], about as large as the projection itself, and one
B [rank, head_size] shared by every head of q, k and v. kbert's `EinsumDense` splits the
kernel where the equation does, into the axes the input contracts and the axes the output
keeps: A [input axes..., rank], B [rank, output axes...] (A [hidden, rank] and
B [rank, 3, heads, head_size] for the projection; the same as Keras' for a kernel with one
output axis). Saving merges the update into the kernel, as Keras' LoRA layers do: a saved
model reloads as a plain one with the fine-tuned weights.
"""

import keras
from keras import ops

from kbert import _keras_private


@keras.saving.register_keras_serializable(package="kbert")
class EinsumDense(keras.layers.EinsumDense):
    """`keras.layers.EinsumDense` whose LoRA update is low-rank as a map from the input's
    axes to the output's (see the module docstring). Without LoRA it is Keras' layer."""

    def _input_axes(self):
        """How many leading kernel axes the input contracts, where they lead the kernel's
        axes; None otherwise."""
        inputs, rest = self.equation.split(",")
        kernel = rest.split("->")[0]
        count = 0
        while count < len(kernel) and kernel[count] in inputs:
            count += 1
        if any(axis in inputs for axis in kernel[count:]):
            return None
        return count

    def enable_lora(self, rank, lora_alpha=None, a_initializer="he_uniform",
                    b_initializer="zeros"):
        split = self._input_axes()
        shape = tuple(self._kernel.shape) if self.built else ()
        if split is None or split == len(shape) - 1 or self.quantization_mode is not None:
            return super().enable_lora(rank, lora_alpha, a_initializer, b_initializer)
        if not self.built:
            raise ValueError("Cannot enable lora on a layer that isn't yet built.")
        if self.lora_enabled:
            raise ValueError("lora is already enabled. This can only be done once per layer.")
        if self.kernel_constraint:
            raise ValueError("Lora is incompatible with kernel constraints. In order to "
                             "enable lora on this layer, remove the `kernel_constraint` "
                             "argument.")
        tracker = _keras_private.layer_tracker(self)
        tracker.unlock()
        # float32, as Keras' LoRA weights: merged into the kernel's own dtype when saved.
        self.lora_kernel_a = self.add_weight(
            name="lora_kernel_a", shape=shape[:split] + (rank,),
            initializer=keras.initializers.get(a_initializer), dtype="float32")
        self.lora_kernel_b = self.add_weight(
            name="lora_kernel_b", shape=(rank,) + shape[split:],
            initializer=keras.initializers.get(b_initializer), dtype="float32")
        self._kernel.trainable = False
        tracker.lock()
        self.lora_enabled = True
        self.lora_rank = rank
        self.lora_alpha = lora_alpha if lora_alpha is not None else rank
        self._lora_split = split

    def _merged(self):
        update = ops.tensordot(self.lora_kernel_a, self.lora_kernel_b, axes=1)
        return ops.add(self._kernel, (self.lora_alpha / self.lora_rank) * update)

    @property
    def kernel(self):
        if getattr(self, "_lora_split", None) is None:
            return super().kernel
        return ops.cast(self._merged(), self.compute_dtype)

    def _get_kernel_with_merged_lora(self):
        # What saving writes: the merge in the kernel's own dtype (float32 under a mixed
        # policy), not rounded to the compute dtype as `kernel` is.
        if getattr(self, "_lora_split", None) is None:
            return super()._get_kernel_with_merged_lora()
        return ops.cast(self._merged(), self._kernel.dtype), None, None


def enable_lora(model, rank, alpha=None, keep_trainable=()):
    """Freezes every weight of `model` (a backbone) and puts LoRA of `rank` on each of its
    encoder blocks' dense layers (`Dense` and `EinsumDense` inside `transformer_layers`):
    only the A and B matrices (and those layers' biases) train, and the layers named in
    `keep_trainable` ("pooler": what a classifier head reads; one the family lacks is
    skipped). Returns the layers that got LoRA."""
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ValueError(f"LoRA rank must be a positive integer, got {rank!r}.")
    if not model.built:
        raise ValueError("Build the model before enabling LoRA.")
    layers = _keras_private.flatten_layers(model)
    enabled = [layer for layer in layers if getattr(layer, "lora_enabled", False)]
    if enabled:
        raise ValueError(f"LoRA is already enabled on {type(model).__name__} (rank "
                         f"{enabled[0].lora_rank}, {len(enabled)} layers); it is enabled once. "
                         "Save and reload the model (the adapters merged) to add new ones.")
    if isinstance(keep_trainable, str):
        raise ValueError(f"keep_trainable is a list of layer names, got the string "
                         f"{keep_trainable!r}; pass ({keep_trainable!r},).")
    missing = [name for name in keep_trainable if not hasattr(model, name)]
    if missing:
        raise ValueError(f"keep_trainable names {missing}, which {type(model).__name__} does "
                         f"not have.")
    adapted = [layer for block in model.transformer_layers
               for layer in [block, *_keras_private.flatten_layers(block)]
               if isinstance(layer, (keras.layers.Dense, keras.layers.EinsumDense))]
    if not adapted:
        raise ValueError(f"{type(model).__name__} has no dense layer in its encoder blocks "
                         f"to put LoRA on.")
    model.trainable = True
    for layer in layers:
        layer.trainable = False
    for layer in adapted:
        layer.trainable = True
        layer.enable_lora(rank, lora_alpha=alpha)
    for name in keep_trainable:
        layer = getattr(model, name)
        if layer is not None:  # a family without that layer (a pooler): nothing to keep
            layer.trainable = True
    return adapted
