"""Structured pruning of a backbone: attention heads, feed-forward units and whole layers
taken out, the result a smaller dense backbone of the same family, its weights those of the
parts kept.

What is removed is exactly what masking it to zero removes: a head's query, key and value
columns and its rows of the attention output projection (its share of the output, which is
a sum over heads), a feed-forward unit's column of the intermediate layer (ModernBERT's: its
input and its gate) and its row of the output layer. So the pruned backbone gives the full
one's outputs with those parts' output rows set to zero (`masked`), within float32 rounding;
without a layer, what the full one gives when that block is skipped (the residual stream
passes on). The pruned backbone's config keeps the heads and units each block has left
(`BertConfig.layer_heads`, `layer_intermediate_sizes`, MobileBERT's
`layer_feedforward_sizes`; the head size stays what it was) and what its family numbers by
layer (ModernBERT's global layers).

Where each part sits in a block's weights, its block says (`pruning_layout`). Which parts to
remove is the caller's choice (`kbert.training.pruning` ranks them by their importance on a
task's data), every family's: ALBERT's layers share blocks (`num_groups`), so its heads and
units are removed from a block, from every layer that runs it, and a layer removed leaves the
block to the others; a MobileBERT block's units are those of its stacked feed-forward
networks, one network after another (each keeps one).
"""

import numpy as np

from kbert import _keras_private

PRUNABLE = ("BERT", "RoBERTa", "ELECTRA", "DistilBERT", "ALBERT", "DeBERTa-v3", "MobileBERT",
            "ModernBERT")


def check_prunable(backbone):
    """ValueError unless `backbone` is one whose structure `pruned` can change."""
    name = type(backbone).__name__
    blocks = getattr(backbone, "transformer_layers", None) or []
    config = getattr(backbone, "config", None)
    odd = [type(block).__name__ for block in blocks if not hasattr(block, "pruning_layout")]
    if not blocks or odd or not hasattr(config, "kept_layers"):
        raise ValueError(f"Structured pruning changes the blocks of {', '.join(PRUNABLE)}; "
                         f"this is a {name}" + (f" whose {odd[0]} has no pruning layout "
                                                f"(`pruning_layout`)" if odd else "") + ".")
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
    """(heads, units): each block's attention heads and feed-forward units, two lists of
    ints (one block per layer, but ALBERT's `num_groups`; a MobileBERT block's units are
    those of its feed-forward networks, one network after another)."""
    check_prunable(backbone)
    layouts = [block.pruning_layout() for block in backbone.transformer_layers]
    return ([layout.count("heads") for layout in layouts],
            [layout.count("units") for layout in layouts])


def kept_blocks(backbone, layers):
    """The blocks (indices, sorted) that some layer not in `layers` still runs: the others'
    but the removed layers' (ALBERT: the shared blocks with a layer left)."""
    config, removed = backbone.config, set(layers)
    return sorted({config.block_of(i) for i in range(config.num_layers) if i not in removed})


def _indices(what, given, count, block):
    given = list(given)
    odd = [i for i in given if isinstance(i, bool) or not isinstance(i, (int, np.integer))]
    if odd:
        raise ValueError(f"{what} of {block}: {odd[0]!r} is not an index (an int).")
    values = sorted(set(int(i) for i in given))
    bad = [i for i in values if not 0 <= i < count]
    if bad:
        raise ValueError(f"{what} {bad} of {block}: it has {count} "
                         f"(indices 0 to {count - 1}).")
    return values


def check_removal(backbone, heads=None, units=None, layers=None):
    """The removal, validated against `backbone`'s structure: (heads, units, layers) as
    {block: sorted indices}, {block: sorted indices}, sorted layer indices (a block is a
    layer, but in ALBERT). A layer, block, head or unit index the backbone does not have,
    every head or every unit of a kept block (remove the layer instead), or every layer are
    errors that name the value and what is allowed."""
    head_counts, unit_counts = structure(backbone)
    config = backbone.config
    count, blocks = config.num_layers, len(head_counts)
    word = "layer" if blocks == count else "block"
    heads, units, layers = dict(heads or {}), dict(units or {}), list(layers or [])

    def index(value, what, total, kind):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or \
                not 0 <= value < total:
            shared = " (its layers share blocks: num_groups)" if kind != "layer" else ""
            raise ValueError(f"{what} names {kind} {value!r}; the model has {total} {kind}s "
                             f"(0 to {total - 1}){shared}.")
        return int(value)

    layers = sorted({index(i, "layers", count, "layer") for i in layers})
    if len(layers) == count:
        raise ValueError(f"layers={layers} removes every layer of the {count}; keep one.")
    config.kept_layers([i for i in range(count) if i not in layers])  # refused by name
    kept = kept_blocks(backbone, layers)
    removal = {}
    for name, given, counts in (("heads", heads, head_counts), ("units", units, unit_counts)):
        removal[name] = {}
        for block, indices in given.items():
            block = index(block, name, blocks, word)
            values = _indices(name, indices, counts[block], f"{word} {block}")
            if block not in kept or not values:
                continue
            _check_runs(backbone.transformer_layers[block].pruning_layout(), name, values,
                        f"{word} {block}")
            if len(values) == counts[block]:
                instead = (f"remove the layer instead (layers=[{block}])" if word == "layer"
                           else "remove its layers instead")
                raise ValueError(f"{name} removes all {counts[block]} {name} of {word} "
                                 f"{block}; a {word} keeps one at least: {instead}.")
            removal[name][block] = values
    return removal["heads"], removal["units"], layers


def _check_runs(layout, part, removed, block):
    """ValueError where removing `removed` leaves a run of `part` (a MobileBERT block's
    feed-forward network) empty."""
    runs = layout.runs[part]
    left = layout.sizes(part, _kept(layout.count(part), removed))
    for run, size in enumerate(left if len(runs) > 1 else ()):
        if not size:
            start = sum(runs[:run])
            raise ValueError(f"{part} removes all {runs[run]} {part} of feed-forward network "
                             f"{run} of {block} ({part} {start} to {start + runs[run] - 1}); "
                             f"each network keeps one.")


def _kept(count, removed):
    return np.setdiff1d(np.arange(count), removed)


def _weights(block):
    """{weight path inside `block`: its variable}."""
    prefix = block.name + "/"
    weights = {}
    for weight in block.weights:
        at = weight.path.find(prefix)
        if at < 0:
            raise ValueError(f"The weight {weight.path!r} of block {block.name!r} is not "
                             f"under its name: pruning reads a block's weights by path.")
        weights[weight.path[at + len(prefix):]] = weight
    return weights


def output_weights(block, part):
    """The weights whose rows are each head's (`part` "heads") or feed-forward unit's
    ("units") share of `block`'s output, as (variable, run size) pairs: the variables whose
    gradients `kbert.training.pruning` scores, their first axis one part (or one
    `head_size`-wide run of rows) after another, the runs in the order of the parts."""
    weights = _weights(block)
    layout = block.pruning_layout()
    return [(weights[key], layout.runs[part][layout.weights[key][4]])
            for key in layout.outputs[part]]


def pruned(backbone, heads=None, units=None, layers=None):
    """A new backbone of `backbone`'s class without the attention heads `heads` ({block:
    [head indices]}: a block is a layer, but in ALBERT), the feed-forward units `units`
    ({block: [unit indices]}) and the layers `layers` ([layer indices]), all numbered as in
    `backbone`; its other weights copied. The layers kept are numbered again from 0."""
    heads, units, layers = check_removal(backbone, heads, units, layers)
    head_counts, unit_counts = structure(backbone)
    config = backbone.config
    kept_layers = [i for i in range(config.num_layers) if i not in layers]
    blocks = kept_blocks(backbone, layers)
    keep = {i: {"heads": _kept(head_counts[i], heads.get(i, ())),
                "units": _kept(unit_counts[i], units.get(i, ()))} for i in blocks}
    layouts = {i: backbone.transformer_layers[i].pruning_layout() for i in blocks}
    smaller = type(backbone).from_config({
        **backbone.get_config(), **config.kept_layers(kept_layers),
        **config.pruned_sizes([len(keep[i]["heads"]) for i in blocks],
                              [layouts[i].sizes("units", keep[i]["units"]) for i in blocks])})
    for name in backbone._layer_names:
        if name == "transformer_layers" or getattr(backbone, name) is None:
            continue
        getattr(smaller, name).set_weights(getattr(backbone, name).get_weights())
    old_blocks = backbone.transformer_layers
    for new, old_index in zip(smaller.transformer_layers, blocks, strict=True):
        _copy_block(old_blocks[old_index], new, keep[old_index])
    return smaller


def _copy_block(source, target, keep):
    """`source`'s weights into `target`, a block of the same kind with the heads
    `keep["heads"]` and the units `keep["units"]` of it (index arrays)."""
    layout = source.pruning_layout()
    values = {key: weight.numpy() for key, weight in _weights(source).items()}
    for key, weight in _weights(target).items():
        value = values[key]
        if key in layout.weights:
            part, axis = layout.weights[key][:2]
            value = np.take(value, layout.positions(key, keep[part]), axis=axis)
        weight.assign(value)


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
        layout = block.pruning_layout()
        weights = _weights(block)
        for part, removed in (("heads", heads.get(index, [])), ("units", units.get(index, []))):
            for key in layout.outputs[part]:
                values = weights[key].numpy()
                values[layout.positions(key, removed)] = 0.0
                weights[key].assign(values)
    return copy
