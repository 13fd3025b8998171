"""`train_step`: one pretraining step (forward, loss, backward, Adam update) of kbert's
`BertPretrainer` (MLM only, and MLM + NSP) and keras-hub's `BertMaskedLM` on the same
architecture, float32, XLA on.

After warm-up, the models take turns for `rounds` rounds of `steps` steps of `train_on_batch`
on one batch (so that drift in the machine's speed hits all alike). The best round gives
sequences/s, as `timeit` does: interference (other processes, a shared host) only ever adds
time; the median round is printed beside it. Printed and returned: each round's seconds,
sequences/s, the ratio kbert / keras-hub, and the achieved GFLOP/s as a fraction of an XLA
float32 matmul measured in the same run.
"""

import os
import platform

from benchmarks import ratios
from benchmarks.steps import (keras_hub_backbone, matmul_gflops, synthetic_batch,
                              train_flops_per_sequence, train_steps)

PEER = "keras-hub BertMaskedLM"


def build_models(preset, config, batch, jit_compile):
    """(name, model, x, y, sample_weight, has_nsp) for each contestant, compiled the same way."""
    import keras
    import keras_hub

    import kbert

    features, mask_ids, mask_weights, nsp = batch
    kbert_labels = {"mask_ids": mask_ids, "mask_weights": mask_weights, "next_sentence_labels": nsp}
    contestants = []
    for name, head in (("kbert BertPretrainer MLM", "mlm"),
                       ("kbert BertPretrainer MLM+NSP", "pretrainer")):
        model = kbert.presets.load(preset, head=head, weights=None)
        model.compile(optimizer=keras.optimizers.Adam(1e-4), jit_compile=jit_compile)
        contestants.append((name, model, features, kbert_labels, None, head == "pretrainer"))

    model = keras_hub.models.BertMaskedLM(keras_hub_backbone(config), preprocessor=None)
    model.compile(optimizer=keras.optimizers.Adam(1e-4), jit_compile=jit_compile)
    contestants.append((PEER, model, features, mask_ids, mask_weights, False))
    return contestants


def run(preset, batch_size, sequence_length, predictions, steps, rounds, warmup_steps,
        matmul_size, jit_compile):
    """Prints the table; returns {"preset", "sequence_length", "batch_size", "predictions",
    "jit_compile", "matmul_gflops", "rounds": {name: [seconds of each round]},
    "rows": {name: benchmarks.ratios.speed_rows' row}}."""
    import keras
    import keras_hub
    import tensorflow as tf

    import kbert

    config = kbert.models.BertConfig.from_dict(kbert.presets.get(preset)["config"])
    batch, seq, preds = batch_size, sequence_length, predictions
    print(
        f"train_step: {preset} (L{config.num_layers} H{config.hidden_size} "
        f"A{config.num_heads}), sequence {seq}, batch {batch}, {preds} masked, float32, "
        f"XLA {'on' if jit_compile else 'off'}"
    )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores; TensorFlow {tf.__version__}, "
        f"Keras {keras.__version__}, keras-hub {keras_hub.__version__}, kbert {kbert.__version__}"
    )
    peak = matmul_gflops(matmul_size)
    n = matmul_size
    print(f"XLA float32 matmul {n}x{n}x{n}: {peak:.1f} GFLOP/s")

    contestants = build_models(preset, config, synthetic_batch(config, batch, seq, preds),
                               jit_compile)
    for name, model, x, y, weights, _ in contestants:
        seconds = train_steps(model, x, y, warmup_steps, weights)
        print(f"  compiled and warmed up {name} in {seconds:.0f} s", flush=True)

    times = {name: [] for name, *_ in contestants}
    for r in range(rounds):
        for name, model, x, y, weights, _ in contestants:
            times[name].append(train_steps(model, x, y, steps, weights))
        print(f"  round {r + 1}/{rounds}: " + ", ".join(
            f"{name} {times[name][-1] / steps:.3f} s/step" for name, *_ in contestants),
            flush=True)

    rows = ratios.speed_rows(
        times, PEER, steps * batch,
        {name: train_flops_per_sequence(config, seq, preds, nsp)
         for name, *_, nsp in contestants}, peak)
    print()
    print(
        f"{'model':30s} {'seq/s':>7s} {'GFLOP/s':>8s} {'of matmul':>10s} "
        f"{'kbert/keras-hub':>16s} {'(median rounds)':>16s}"
    )
    for name, row in rows.items():
        print(
            f"{name:30s} {row['sequences_per_second']:7.1f} {row['gflops']:8.1f} "
            f"{row['of_peak']:10.1%} {row['ratio']:16.2f} {row['ratio_median']:16.2f}"
        )
    return {"preset": preset, "sequence_length": seq, "batch_size": batch, "predictions": preds,
            "jit_compile": bool(jit_compile), "steps_per_round": steps, "matmul_gflops": peak,
            "peer": PEER, "rounds": times, "rows": rows}
