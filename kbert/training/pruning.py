"""Pruning a fine-tuned task model on its task's data: how much each attention head and each
feed-forward unit matters (`importance`), which of them to remove at a given sparsity
(`plan`), how much each whole layer matters (`layer_importance`, by ablation) and which to
remove (`plan_layers`), and the task model rebuilt on the smaller backbone with its head
(`prune`; `kbert.models.pruning` removes the parts).

Importance is Michel et al.'s ("Are Sixteen Heads Really Better than One?", 2019): the loss's
first-order change when a head is gated off, |dL/d xi_h| with a gate xi_h = 1 on the head's
share of the attention output, summed over batches. That share is `context_h @ W_o[h]`, so
dL/d xi_h = sum(W_o[h] * dL/dW_o[h]): the gradient of the attention output projection's
kernel gives every head's score, with no gates put into the graph. A feed-forward unit's is
the same with its row of the output layer (the Taylor score of the unit's activation, as
nn_pruning's and Molchanov et al.'s). Each block's scores are then divided by their L2 norm,
as Michel et al. do so that one threshold ranks heads across layers. Where each part's rows
are, each family's block says (`pruning_layout()`): every family is scored so.

Recovery after pruning is fine-tuning the smaller model on the same task (`fit`, or
`tools/finetune.py --prune_heads=... --prune_units=...`, which ranks, prunes and fine-tunes),
or distilling it from the unpruned one (`kbert.training.task_distillation.TaskDistiller`;
`--prune_distil`).
"""

import dataclasses

import numpy as np

from kbert.models import pruning as backbone_pruning


@dataclasses.dataclass
class Importance:
    """Per block (a layer, but ALBERT's shared blocks), each attention head's (`heads`) and
    each feed-forward unit's (`units`) score, numpy arrays, normalized per block (L2);
    `batches`: how many batches were read; `unit_runs`: per block, the sizes of its
    feed-forward networks, whose units follow one another in `units` (a MobileBERT block
    has several; `None`: one network a block)."""

    heads: list
    units: list
    batches: int
    unit_runs: list = None


def _checked_model(model):
    backbone = getattr(model, "backbone", None)
    if backbone is None:
        raise ValueError(f"Pruning takes a kbert task model (a TextClassifier, ...: a model "
                         f"with a backbone); got a {type(model).__name__}.")
    backbone_pruning.check_prunable(backbone)
    if getattr(model, "loss", None) is None:
        raise ValueError(f"{type(model).__name__} is not compiled: importance is the "
                         f"gradient of its loss; compile() it first (the task's loss).")
    return backbone


def _normalized(scores):
    norm = np.linalg.norm(scores)
    return scores / norm if norm > 0 else scores


def _batches(model, x, y, batch_size, steps):
    """The first `steps` batches (all: None) of `model.labelled_batches(x, y, batch_size)`,
    each as (inputs, targets, sample weights)."""
    import itertools

    import keras

    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or
                              steps < 1):
        raise ValueError(f"steps={steps!r}: a positive number of batches, or None (all).")
    return itertools.islice((keras.utils.unpack_x_y_sample_weight(batch)
                             for batch in model.labelled_batches(x, y, batch_size)), steps)


def importance(model, x, y=None, batch_size=None, steps=None, progress=True):
    """Each head's and feed-forward unit's importance (see the module) on the labelled data
    `x`, `y` of `model` (a compiled kbert task model of a prunable family: the loss it was
    compiled with), read as `model.evaluate` reads it (raw inputs through the model's
    preprocessor, in batches of `batch_size` grouped by length; or token-id features; or a
    `tf.data` dataset of batches). `steps`: at most this many batches. `progress`: a Keras
    progress bar. Returns an `Importance`."""
    import keras
    import tensorflow as tf

    backbone = _checked_model(model)
    data = _batches(model, x, y, batch_size, steps)
    blocks = backbone.transformer_layers
    # Each block's heads' and units' output weights, with the parts in each, in order.
    outputs = [backbone_pruning.output_weights(block, part) for part in ("heads", "units")
               for block in blocks]
    kernels = [weight for block in outputs for weight, _ in block]
    counts = [count for block in outputs for _, count in block]

    @tf.function(reduce_retracing=True)  # a shape per length group
    def scores(inputs, targets, weights):
        with tf.GradientTape() as tape:
            tape.watch([k.value for k in kernels])  # frozen layers too
            predictions = model(inputs, training=False)
            loss = model.compute_loss(x=inputs, y=targets, y_pred=predictions,
                                      sample_weight=weights)
        grads = tape.gradient(loss, [k.value for k in kernels])
        # A part's rows (a head's [D, H] or D rows of [N x D, H]; a unit's row) -> its score.
        scores = iter(tf.abs(tf.reduce_sum(tf.reshape(k * g, (n, -1)), axis=1))
                      for k, g, n in zip(kernels, grads, counts))
        return [tf.concat([next(scores) for _ in block], 0) for block in outputs]

    head_counts, unit_counts = backbone_pruning.structure(backbone)
    heads, units = [np.zeros(n) for n in head_counts], [np.zeros(n) for n in unit_counts]
    bar = keras.utils.Progbar(steps, unit_name="batch") if progress else None
    batches = 0
    for inputs, targets, weights in data:
        for total, value in zip(heads + units, scores(inputs, targets, weights)):
            total += value.numpy()
        batches += 1
        if bar is not None:
            bar.update(batches)
    if not batches:
        raise ValueError("importance read no batch: the data is empty.")
    runs = [block.pruning_layout().runs["units"] for block in blocks]
    return Importance([_normalized(s) for s in heads], [_normalized(s) for s in units],
                      batches, runs if any(len(r) > 1 for r in runs) else None)


def layer_importance(model, x, y=None, batch_size=None, steps=None, progress=True):
    """Each layer's importance by ablation: the rise of `model`'s loss on the data when that
    layer alone is removed (`prune(model, layers=[i])`: its block skipped, the residual
    stream passing on), each model on the same batches. (A layer's output is normalized
    after its residual sum, so a first-order gate on a whole layer is not what removing it
    does: the loss itself is measured.) `x`, `y`, `batch_size`, `steps`, `progress` as
    `importance` takes them; the batches are read once and kept. Returns a numpy array
    [num_layers]: the loss without each layer minus the full model's (below zero where a
    layer's removal helps on this data)."""
    import keras
    import tensorflow as tf

    backbone = _checked_model(model)
    count = backbone.config.num_layers
    try:  # one layer removed: what the family can keep (ALBERT's groups may not)
        backbone.config.kept_layers(list(range(1, count)))
    except ValueError as e:
        raise ValueError(f"layer_importance removes one layer at a time, which this model "
                         f"cannot: {e}") from None
    batches = list(_batches(model, x, y, batch_size, steps))
    if not batches:
        raise ValueError("layer_importance read no batch: the data is empty.")
    bar = keras.utils.Progbar(count + 1, unit_name="model") if progress else None

    def mean_loss(candidate):
        @tf.function(reduce_retracing=True)  # a shape per length group
        def loss(inputs, targets, weights):
            return candidate.compute_loss(x=inputs, y=targets, sample_weight=weights,
                                          y_pred=candidate(inputs, training=False))

        total = sum(float(loss(*batch)) for batch in batches) / len(batches)
        if bar is not None:
            bar.add(1)
        return total

    full = mean_loss(model)
    rises = []
    for layer in range(count):
        smaller = prune(model, layers=[layer])
        smaller.compile(loss=model.loss)
        rises.append(mean_loss(smaller) - full)
    return np.asarray(rises)


def plan_layers(scores, count):
    """The `count` layers whose removal raises the loss least (`scores`: `layer_importance`'s
    answer), as `prune(..., layers=...)` takes them: a sorted list."""
    scores = np.asarray(scores)
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or \
            not 0 <= count < len(scores):
        raise ValueError(f"count={count!r}: the number of layers to remove, 0 to "
                         f"{len(scores) - 1} of the {len(scores)} (one stays).")
    return sorted(int(i) for i in np.argsort(scores, kind="stable")[:count])


def _check_sparsity(name, value):
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"{name}={value!r}: a fraction in [0, 1) of them to remove.")
    return float(value)


def _best(values, runs):
    """{(block, index)}: each block's best part, and each of its runs' (feed-forward
    networks') best where it has several (`runs`: per block, the run sizes, or None)."""
    best = set()
    for block, scores in enumerate(values):
        start = 0
        for size in (runs[block] if runs else [len(scores)]):
            best.add((block, start + int(np.argmax(scores[start:start + size]))))
            start += size
    return best


def plan(scores, head_sparsity=None, unit_sparsity=None):
    """What to remove: the `head_sparsity` fraction of all heads and the `unit_sparsity`
    fraction of all feed-forward units with the lowest scores (`scores`: an `Importance`),
    ranked across blocks, each block keeping its best head and its best unit (a MobileBERT
    block: the best unit of each of its feed-forward networks), so that a sparsity near 1
    removes all but those: fewer than asked. The count is the fraction of the total to the
    nearest part. Returns `(heads, units)` as `kbert.models.pruning.pruned` takes them
    ({block: [indices]}; a block is a layer, but ALBERT's shared ones)."""
    removal = []
    for name, values, sparsity, runs in (
            ("head_sparsity", scores.heads, head_sparsity, None),
            ("unit_sparsity", scores.units, unit_sparsity, scores.unit_runs)):
        sparsity = _check_sparsity(name, sparsity)
        total = sum(len(v) for v in values)
        ranked = sorted((float(score), layer, index) for layer, layer_scores in
                        enumerate(values) for index, score in enumerate(layer_scores))
        best = _best(values, runs)  # stays, whatever the sparsity
        count = int(sparsity * total + 0.5)  # to the nearest, halves up
        chosen = {}
        for _, layer, index in [part for part in ranked if part[1:] not in best][:count]:
            chosen.setdefault(layer, []).append(index)
        removal.append({layer: sorted(indices) for layer, indices in sorted(chosen.items())})
    return tuple(removal)


def prune(model, heads=None, units=None, layers=None):
    """A new task model of `model`'s class (its settings and preprocessor) on
    `kbert.models.pruning.pruned(model.backbone, heads, units, layers)`, its head's
    weights copied; not compiled (compile it to fine-tune it back)."""
    backbone = model.backbone
    smaller = backbone_pruning.pruned(backbone, heads, units, layers)
    config = model.get_config()
    config["backbone"] = smaller
    config["preprocessor"] = getattr(model, "preprocessor", None)
    result = type(model).from_config(config)
    own = {id(w) for w in backbone.weights}
    source = [w for w in model.weights if id(w) not in own]
    new_own = {id(w) for w in smaller.weights}
    target = [w for w in result.weights if id(w) not in new_own]
    for s, t in zip(source, target, strict=True):
        t.assign(s)
    return result
