"""LoRA (Hu et al., 2021) on a kbert backbone: low-rank adapters on the attention's
projections, through Keras' own `enable_lora` of `Dense` and `EinsumDense`; every other
weight of the backbone frozen, so that fine-tuning trains the adapters (and the task head)
only. `merge_lora` folds the adapters into the kernels for export.

The projections are found by name in every family: the fused `qkv_dense` (BERT, ALBERT,
DistilBERT, ELECTRA, RoBERTa, ModernBERT: the adapter spans the query, key and value at once),
DeBERTa-v3's `query_dense`, `key_dense`, `value_dense`, MobileBERT's `query`, `key`, `value`,
and each block's `attention_output_dense`.
"""

import keras
from keras import ops

from kbert.layers import _utils

TARGETS = ("qkv_dense", "query_dense", "key_dense", "value_dense", "query", "key", "value",
           "attention_output_dense")


def _dense_layers(model):
    return [layer for layer in model._flatten_layers(include_self=False)
            if isinstance(layer, (keras.layers.Dense, keras.layers.EinsumDense))]


def enable_lora(backbone, rank, targets=TARGETS):
    """Adapters of `rank` on the layers of `backbone` named in `targets`; every other layer
    of the backbone frozen (the targets keep their biases trainable, as keras-hub's
    `enable_lora`). Returns the adapted layers. A ValueError names the backbone's dense
    layers when no target matches."""
    rank = _utils.check_positive_int("rank", rank)
    layers = _dense_layers(backbone)
    adapted = [layer for layer in layers if layer.name in targets]
    if not adapted:
        raise ValueError(f"No dense layer of {type(backbone).__name__} is named in "
                         f"targets={tuple(targets)}; its dense layers are "
                         f"{sorted({layer.name for layer in layers})}.")
    if any(layer.lora_enabled for layer in adapted):
        raise ValueError(f"LoRA is already enabled on {type(backbone).__name__}.")
    for layer in backbone._flatten_layers(include_self=False):
        layer.trainable = False
    for layer in adapted:
        layer.trainable = True
        layer.enable_lora(rank)
    return adapted


def merge_lora(model):
    """Folds every adapter of `model` into its kernel (kernel + scale * A @ B) and zeroes
    the adapter, so that the model computes the same with plain kernels (an export, a
    Hugging Face checkpoint). Returns how many layers were merged."""
    merged = 0
    for layer in _dense_layers(model):
        if not getattr(layer, "lora_enabled", False):
            continue
        layer._kernel.assign(ops.convert_to_tensor(layer.kernel))  # the adapted kernel
        layer.lora_kernel_b.assign(ops.zeros_like(layer.lora_kernel_b))
        merged += 1
    return merged
