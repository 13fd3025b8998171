"""`finetune`: one fine-tuning step (forward, loss, backward, AdamW update) of kbert's
`TextClassifier` on a `BertBackbone` and keras-hub's `BertTextClassifier` on the same
architecture (random weights, pooled output -> dropout -> dense, as both build it), sentence
pairs, float32, XLA on both, the same AdamW (BERT's fine-tuning settings, no decay on biases
and LayerNorm) and the same loss and accuracy metric.

After warm-up, the models take turns for `rounds` rounds of `steps` steps of
`train_on_batch` on one batch (the XLA train step `fit` runs, without the tf.data iterator).
Printed and returned: each round's seconds per step, sequences/s, steps/s, GFLOP/s and the
ratio kbert / keras-hub (best round and median round; target >= 1.2).
"""

import os
import platform

from benchmarks import ratios
from benchmarks.steps import (keras_hub_backbone, matmul_gflops, synthetic_batch,
                              train_flops_per_sequence, train_steps)


def fine_tuning_adamw():
    """BERT's fine-tuning AdamW (kbert.tasks' default), one per model, without decay on
    biases and LayerNorms, as `Task.compile` sets it."""
    from kbert.models.optimizers import NO_DECAY_NAMES
    from kbert.tasks.task import fine_tuning_adamw as kbert_default

    optimizer = kbert_default()
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
    return optimizer


def build_classifiers(preset, config, num_classes, jit_compile):
    """(name, model) for kbert's TextClassifier and keras-hub's BertTextClassifier, the same
    architecture, compiled the same way."""
    import keras
    import keras_hub

    import kbert

    def compile_model(model):
        # kbert's compile() defaults are the same: given here so that nothing differs.
        model.compile(optimizer=fine_tuning_adamw(),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                      jit_compile=jit_compile)
        return model

    backbone = kbert.presets.load(preset, head=None, weights=None)
    ours = kbert.tasks.TextClassifier(backbone, num_classes=num_classes, head="pooled")
    theirs = keras_hub.models.BertTextClassifier(
        keras_hub_backbone(config), num_classes=num_classes, preprocessor=None,
        dropout=ours.dropout)
    if theirs.count_params() != ours.count_params():
        raise AssertionError(f"Not the same architecture: {theirs.count_params()} "
                             f"parameters against kbert's {ours.count_params()}.")
    return [("kbert TextClassifier", compile_model(ours)),
            ("keras-hub BertTextClassifier", compile_model(theirs))]


def run(preset, num_classes, batch_size, sequence_length, steps, rounds, warmup_steps,
        matmul_size, jit_compile):
    """Prints the table; returns {"preset", "sequence_length", "batch_size", "num_classes",
    "jit_compile", "parameters", "matmul_gflops", "rounds": {name: [seconds of each round]},
    "rows": {name: benchmarks.ratios.speed_rows' row}}."""
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf

    import kbert

    config = kbert.models.BertConfig.from_dict(kbert.presets.get(preset)["config"])
    batch, seq = batch_size, sequence_length
    print(f"finetune: {preset} (L{config.num_layers} H{config.hidden_size} "
          f"A{config.num_heads}), sequence {seq}, batch {batch}, {num_classes} classes, "
          f"AdamW, float32, XLA {'on' if jit_compile else 'off'}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; TensorFlow {tf.__version__}, "
          f"Keras {keras.__version__}, keras-hub {keras_hub.__version__}, "
          f"kbert {kbert.__version__}")
    peak = matmul_gflops(matmul_size)
    n = matmul_size
    print(f"XLA float32 matmul {n}x{n}x{n}: {peak:.1f} GFLOP/s")

    features = synthetic_batch(config, batch, seq, 1)[0]
    del features["mask_positions"]
    labels = np.random.default_rng(1).integers(0, num_classes, (batch,)).astype("int32")
    contestants = build_classifiers(preset, config, num_classes, jit_compile)
    parameters = contestants[0][1].count_params()
    print(f"  {parameters:,} parameters each")
    for name, model in contestants:
        seconds = train_steps(model, features, labels, warmup_steps)
        print(f"  compiled and warmed up {name} in {seconds:.0f} s", flush=True)

    times = {name: [] for name, _ in contestants}
    for r in range(rounds):
        for name, model in contestants:
            times[name].append(train_steps(model, features, labels, steps))
        print(f"  round {r + 1}/{rounds}: " + ", ".join(
            f"{name} {times[name][-1] / steps:.2f} s/step" for name, _ in contestants),
            flush=True)

    # Layers, pooler and a 2-way head: the pretrainer's count with NSP and no masked positions.
    flops = train_flops_per_sequence(config, seq, 0, nsp=True)
    rows = ratios.speed_rows(times, contestants[1][0], steps * batch,
                             {name: flops for name, _ in contestants}, peak, steps=steps)
    print()
    print(f"{'model':30s} {'seq/s':>7s} {'steps/s':>8s} {'GFLOP/s':>8s} {'of matmul':>10s} "
          f"{'kbert/keras-hub':>16s} {'(median rounds)':>16s}")
    for name, row in rows.items():
        print(f"{name:30s} {row['sequences_per_second']:7.1f} {row['steps_per_second']:8.2f} "
              f"{row['gflops']:8.1f} {row['of_peak']:10.1%} {row['ratio']:16.2f} "
              f"{row['ratio_median']:16.2f}")
    ours = rows[contestants[0][0]]
    print(f"kbert / keras-hub fine-tuning steps/s: {ours['ratio']:.2f} (best "
          f"rounds), {ours['ratio_median']:.2f} (median rounds); target >= 1.2")
    return {"preset": preset, "sequence_length": seq, "batch_size": batch,
            "num_classes": num_classes, "jit_compile": bool(jit_compile),
            "parameters": parameters, "steps_per_round": steps, "matmul_gflops": peak,
            "peer": contestants[1][0], "rounds": times, "rows": rows}
