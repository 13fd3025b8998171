"""Structured pruning of a backbone: attention heads, feed-forward units and whole layers
taken out, the result a smaller dense backbone of the same family, its weights those of the
parts kept.

What is removed is exactly what masking it to zero removes: a head's query, key and value
columns and its rows of the attention output projection (its share of the output, which is
a sum over heads), a feed-forward unit's column of the intermediate layer and its row of the
output layer. So the pruned backbone gives the full one's outputs with those parts' output
rows set to zero (`masked`), within float32 rounding; without a layer, what the full one
gives when that block is skipped (the residual stream passes on). The pruned backbone's
config keeps the heads and units each layer has left (`BertConfig.layer_heads`,
`layer_intermediate_sizes`; the head size stays `hidden_size / num_heads`).

Which parts to remove is the caller's choice (`kbert.training.pruning` ranks them by their
importance on a task's data). Families: BERT's block (`TransformerEncoder`): BERT, RoBERTa,
ELECTRA, DistilBERT. ALBERT's layers share their weights (one block for several layers), and
DeBERTa-v3's, MobileBERT's and ModernBERT's blocks are their own: their backbones are refused,
naming the families that can be pruned.
"""

import numpy as np

from kbert import _keras_private

PRUNABLE = ("BertBackbone", "RobertaBackbone", "ElectraBackbone", "DistilBertBackbone")


def check_prunable(backbone):
    """ValueError unless `backbone` is one whose structure `pruned` can change."""
    from kbert.layers import TransformerEncoder

    name = type(backbone).__name__
    blocks = getattr(backbone, "transformer_layers", None) or []
    shared = len(blocks) != getattr(getattr(backbone, "config", None), "num_layers", -1)
    if name not in PRUNABLE or shared or \
            not all(type(block) is TransformerEncoder for block in blocks):
        raise ValueError(f"Structured pruning changes BERT's block (TransformerEncoder), one "
                         f"per layer: a backbone of {', '.join(PRUNABLE)}; this is a {name}"
                         + (" whose layers share blocks" if shared else "") + ".")
    quantized = [layer.name for block in blocks for layer in
                 _keras_private.flatten_layers(block)
                 if getattr(layer, "quantization_mode", None) is not None]
    if quantized:
        raise ValueError(f"This backbone is quantized ({quantized[0]}, ...): prune the float "
                         f"model, then quantize the pruned one.")
    if any(getattr(layer, "lora_enabled", False) for block in blocks
           for layer in _keras_private.flatten_layers(block)):
        raise ValueError("This backbone has LoRA adapters: pruning copies the plain weights. "
                         "Save and reload the model first (saving merges the adapters).")


def structure(backbone):
    """(heads, units): each layer's attention heads and feed-forward units, two lists of
    ints."""
    check_prunable(backbone)
    return ([block.num_heads for block in backbone.transformer_layers],
            [block.intermediate_size for block in backbone.transformer_layers])


def _indices(what, given, count, layer):
    given = list(given)
    odd = [i for i in given if isinstance(i, bool) or not isinstance(i, (int, np.integer))]
    if odd:
        raise ValueError(f"{what} of layer {layer}: {odd[0]!r} is not an index (an int).")
    values = sorted(set(int(i) for i in given))
    bad = [i for i in values if not 0 <= i < count]
    if bad:
        raise ValueError(f"{what} {bad} of layer {layer}: it has {count} "
                         f"(indices 0 to {count - 1}).")
    return values


def check_removal(backbone, heads=None, units=None, layers=None):
    """The removal, validated against `backbone`'s structure: (heads, units, layers) as
    {layer: sorted indices}, {layer: sorted indices}, sorted layer indices. A layer, head or
    unit index the backbone does not have, every head or every unit of a kept layer (remove
    the layer instead), or every layer are errors that name the value and what is allowed."""
    head_counts, unit_counts = structure(backbone)
    count = len(head_counts)
    heads, units, layers = dict(heads or {}), dict(units or {}), list(layers or [])

    def layer_index(value, what):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or \
                not 0 <= value < count:
            raise ValueError(f"{what} names layer {value!r}; the model has {count} layers "
                             f"(0 to {count - 1}).")
        return int(value)

    layers = sorted({layer_index(i, "layers") for i in layers})
    if len(layers) == count:
        raise ValueError(f"layers={layers} removes every layer of the {count}; keep one.")
    removal = {}
    for name, given, counts in (("heads", heads, head_counts), ("units", units, unit_counts)):
        removal[name] = {}
        for layer, indices in given.items():
            layer = layer_index(layer, name)
            values = _indices(name, indices, counts[layer], layer)
            if layer in layers or not values:
                continue
            if len(values) == counts[layer]:
                raise ValueError(f"{name} removes all {counts[layer]} {name} of layer {layer}; "
                                 f"a layer keeps one at least: remove the layer instead "
                                 f"(layers=[{layer}]).")
            removal[name][layer] = values
    return removal["heads"], removal["units"], layers


def _kept(count, removed):
    return np.setdiff1d(np.arange(count), removed)


def pruned(backbone, heads=None, units=None, layers=None):
    """A new backbone of `backbone`'s class without the attention heads `heads` ({layer:
    [head indices]}), the feed-forward units `units` ({layer: [unit indices]}) and the
    layers `layers` ([layer indices]), all numbered as in `backbone`; its other weights
    copied. The layers kept are numbered again from 0."""
    heads, units, layers = check_removal(backbone, heads, units, layers)
    head_counts, unit_counts = structure(backbone)
    kept_layers = [i for i in range(len(head_counts)) if i not in layers]
    head_keep = {i: _kept(head_counts[i], heads.get(i, ())) for i in kept_layers}
    unit_keep = {i: _kept(unit_counts[i], units.get(i, ())) for i in kept_layers}
    config = backbone.config
    sizes = {name: tuple(len(keep[i]) for i in kept_layers) for name, keep in (
        ("layer_heads", head_keep), ("layer_intermediate_sizes", unit_keep))}
    uniform = {"layer_heads": config.num_heads,
               "layer_intermediate_sizes": config.intermediate_size}
    smaller = type(backbone).from_config({
        **backbone.get_config(), "num_layers": len(kept_layers),
        # `None` where every layer keeps the config's size, as an unpruned model has it.
        **{name: None if set(value) == {uniform[name]} else value
           for name, value in sizes.items()}})
    old_blocks = backbone.transformer_layers
    new_blocks = smaller.transformer_layers
    for name in backbone._layer_names:
        if name == "transformer_layers" or getattr(backbone, name) is None:
            continue
        getattr(smaller, name).set_weights(getattr(backbone, name).get_weights())
    for new, old_index in zip(new_blocks, kept_layers):
        _copy_block(old_blocks[old_index], new, head_keep[old_index], unit_keep[old_index])
    return smaller


def _copy_block(source, target, heads, units):
    """`source`'s weights into `target`, a `TransformerEncoder` with the heads `heads` and the
    units `units` of it (index arrays)."""
    get = {w.path.split("/", 1)[1]: w.numpy() for w in source.weights}
    values = {
        "qkv_dense/kernel": get["qkv_dense/kernel"][:, :, heads],  # [H, 3, N, D]
        "qkv_dense/bias": get["qkv_dense/bias"][:, heads],  # [3, N, D]
        "attention_output_dense/kernel": get["attention_output_dense/kernel"][heads],
        "intermediate_dense/kernel": get["intermediate_dense/kernel"][:, units],
        "intermediate_dense/bias": get["intermediate_dense/bias"][units],
        "output_dense/kernel": get["output_dense/kernel"][units],
    }
    for weight in target.weights:
        key = weight.path.split("/", 1)[1]
        weight.assign(values.get(key, get[key]))


def masked(backbone, heads=None, units=None):
    """A copy of `backbone` (same structure) with the heads `heads` and the units `units`
    (numbered as `pruned` takes them) masked to zero: a head's rows of the attention output
    projection, a unit's row of the output layer. What `pruned` computes, in the full shapes:
    for tests and for measuring a removal's effect before making it. (A layer has no such
    mask: its LayerNorms stay after its outputs are zero; `pruned` skips the whole block.)"""
    heads, units, _ = check_removal(backbone, heads, units)
    copy = type(backbone).from_config(backbone.get_config())
    copy.set_weights(backbone.get_weights())
    for index, block in enumerate(copy.transformer_layers):
        for weight, rows in ((block.attention_output_dense.kernel, heads.get(index, [])),
                             (block.output_dense.kernel, units.get(index, []))):
            values = weight.numpy()
            values[rows] = 0.0
            weight.assign(values)
    return copy
