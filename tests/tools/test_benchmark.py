"""tools/benchmark.py pipeline: the texts it makes, its padded-to-the-longest baseline, and a
run on a few texts that prints both timings and the ratios (no timed assertions: a benchmark
is not a test)."""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = str(ROOT / "tools" / "benchmark.py")
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")

# The usage errors the tests below check, each the tool's command as `python
# tools/benchmark.py ...` runs it, all in one process (tests/tools/one_process.py: TensorFlow
# imported once, not ~5 s per command). small's FlagError first: it sets TensorFlow's
# threads before it checks the models, which a fresh process allows.
USAGE_ERRORS = {
    "small_models": ["small", "--small_models=bert_base,distil_bert"],
    "small_runs": ["small", "--small_runs=0"],
    "batch_size": ["pipeline", "--batch_size=0"],
}


@pytest.fixture(scope="module")
def usage_errors():
    """{name in USAGE_ERRORS: its CompletedProcess}."""
    from tests.tools.one_process import run_commands

    return dict(zip(USAGE_ERRORS, run_commands(TOOL, list(USAGE_ERRORS.values()), env=ENV,
                                               timeout=300)))


def _module():
    from benchmarks import pipeline

    return pipeline


def test_the_texts_are_deterministic_and_mostly_short_with_a_few_long():
    bench = _module()
    vocabulary = ["[PAD]", "##ing", "the", "a", "house", "river", "Paris", "x1", "stone"]
    texts = bench.make_texts(vocabulary, 2000, seed=3)
    assert texts == bench.make_texts(vocabulary, 2000, seed=3)
    assert texts != bench.make_texts(vocabulary, 2000, seed=4)
    words = np.array([len(t.split()) for t in texts])
    assert np.median(words) <= 20 and np.percentile(words, 90) <= 60
    assert 5 <= (words >= 400).sum() <= 40  # about one in a hundred
    used = {w.strip(".").lower() for t in texts for w in t.split()}
    assert used <= {"the", "house", "river", "stone"}  # lower-case whole words of 3+ letters


def test_make_texts_refuses_a_vocabulary_without_words():
    with pytest.raises(ValueError, match="no whole-word tokens"):
        _module().make_texts(["[PAD]", "##s", "1"], 10, seed=0)


def test_the_baseline_pads_every_batch_to_the_given_length():
    seen = []

    def runner(features):
        seen.append({k: v.copy() for k, v in features.items()})
        return np.zeros((features["token_ids"].shape[0], 2), np.float32)

    padded = _module().PaddedToLongest(runner, 7, pad_id=5)
    features = {"token_ids": np.array([[1, 2, 3], [1, 2, 5]], np.int32),
                "segment_ids": np.zeros((2, 3), np.int32),
                "padding_mask": np.array([[1, 1, 1], [1, 1, 0]], np.int32)}
    assert padded(features).shape == (2, 2)
    assert seen[0]["token_ids"].tolist() == [[1, 2, 3, 5, 5, 5, 5], [1, 2, 5, 5, 5, 5, 5]]
    assert seen[0]["padding_mask"].tolist() == [[1, 1, 1, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0]]
    assert seen[0]["segment_ids"].shape == (2, 7)
    with pytest.raises(ValueError, match="longer than the padded length 2"):
        _module().PaddedToLongest(runner, 2, pad_id=0)(features)


def _has_torch_and_transformers():
    """Whether this Python gives transformers' row: torch and a transformers that can use it
    (the benchmark's own check)."""
    from benchmarks import pipeline

    return pipeline.reference_python_problem(sys.executable) is None


@pytest.mark.slow
def test_the_pipeline_benchmark_prints_both_timings_and_the_ratios(tmp_path):
    result = subprocess.run([sys.executable, TOOL, "pipeline", "--pipeline_texts=40",
                             "--batch_size=8", "--seed=1", f"--results_dir={tmp_path}"],
                            capture_output=True, text=True, env=ENV, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "40 texts (seed 1), batch 8" in out
    grouped = re.search(r"kbert pipeline, length-grouped batches +([\d.]+) ", out)
    padded = re.search(r"kbert pipeline, batches padded to the longest of the list +([\d.]+) ",
                       out)
    assert grouped and padded, out
    ratio = re.search(r"speed-up of length-grouped batches over padding to the longest: "
                      r"([\d.]+)x", out)
    assert ratio and float(ratio.group(1)) == pytest.approx(
        float(padded.group(1)) / float(grouped.group(1)), rel=0.1, abs=0.06), out
    compiled = re.search(r"kbert pipeline, jit_compile=True, compiled +([\d.]+) ", out)
    assert compiled and re.search(r"jit_compile=True, first pass \(compiling\) +[\d.]+ ", out)
    speedup = re.search(r"jit_compile=True over the default, compiled: ([\d.]+)x", out)
    assert speedup and float(speedup.group(1)) == pytest.approx(
        float(grouped.group(1)) / float(compiled.group(1)), rel=0.1, abs=0.06), out
    if _has_torch_and_transformers():
        assert re.search(r"transformers pipeline \(transformers [\d.]+", out), out
        assert re.search(r"kbert / transformers in texts/s: [\d.]+ ", out), out
    else:  # said, not failed
        assert f"kbert / transformers in texts/s: skipped: {sys.executable}" in out, out

    # The JSON record holds what was printed, with the command that reruns it.
    record = json.loads((tmp_path / "pipeline.json").read_text())
    assert record["benchmark"] == "pipeline" and record["command"] == (
        f"python tools/benchmark.py pipeline --pipeline_texts=40 --batch_size=8 --seed=1 "
        f"--results_dir={tmp_path}")
    assert record["versions"]["tensorflow"] and record["machine"]["cores"] == os.cpu_count()
    figures = record["results"]
    assert figures["texts"] == 40 and figures["batch_size"] == 8
    assert figures["seconds"]["grouped"] == pytest.approx(float(grouped.group(1)), abs=0.051)
    assert figures["grouping_speedup"] == pytest.approx(float(ratio.group(1)), abs=0.0051)
    assert figures["seconds"]["compiled"] == pytest.approx(float(compiled.group(1)), abs=0.051)
    assert figures["compiled_over_default"] == pytest.approx(float(speedup.group(1)),
                                                             abs=0.0051)
    assert (figures["skipped"] is None) == _has_torch_and_transformers()


def test_a_bad_batch_size_is_a_usage_error(usage_errors):
    result = usage_errors["batch_size"]
    assert result.returncode != 0
    assert "--batch_size must be at least 1, got 0" in result.stderr


# --- tools/benchmark.py small ---

def _small_module():
    from benchmarks import small

    return small


def test_small_config_items_are_read_as_literals_and_a_malformed_one_is_named():
    small = _small_module()
    assert small.parse_overrides(["num_layers=2", " hidden_size = 32", "dropout=0.0",
                                  "activation=relu", "embedding_size=None"]) == {
        "num_layers": 2, "hidden_size": 32, "dropout": 0.0, "activation": "relu",
        "embedding_size": None}
    for item in ("num_layers", "=2", "num_layers="):
        with pytest.raises(small.FlagError, match=re.escape(f"item {item!r} is not field=value")):
            small.parse_overrides([item])


def test_small_models_must_be_known_presets_named_once():
    small = _small_module()
    available = ["bert_base", "bert_mini", "distil_bert_base"]
    assert small.check_models(["bert_mini", "bert_base"], available) == ["bert_mini", "bert_base"]
    with pytest.raises(small.FlagError, match=r"unknown preset\(s\) 'distil_bert', 'x'; "
                                              r"allowed: bert_base, bert_mini, distil_bert_base"):
        small.check_models(["distil_bert", "bert_base", "x"], available)
    with pytest.raises(small.FlagError, match="names 'bert_mini' more than once"):
        small.check_models(["bert_mini", "bert_base", "bert_mini"], available)
    with pytest.raises(small.FlagError, match="--small_models is empty"):
        small.check_models([], available)


def _row(params, sizes, p50s):
    row = {"params": params}
    row.update(zip(("saved_model", "float32", "float16", "int8"), sizes))
    row.update({runtime: {"p50": p50, "p90": 1.5 * p50}
                for runtime, p50 in zip(("tf", "tflite_float32", "tflite_int8"), p50s)})
    return row


def test_the_distil_bert_claim_is_computed_from_the_measurements():
    small = _small_module()
    results = {"bert_base": _row(1000, (40e6, 30e6, 15e6, 8e6), (100.0, 80.0, 50.0)),
               "distil_bert_base": _row(600, (25e6, 18e6, 9e6, 5e6), (50.0, 64.0, 25.0))}
    line = small.distil_claim(results)
    assert "distil_bert_base has 40.0% fewer parameters" in line
    assert "TFLite float32 file is 40.0% smaller" in line
    assert "TF SavedModel 2.00x, TFLite float32 1.25x, TFLite dynamic int8 2.00x" in line
    assert "not measured (needs bert_base and distil_bert_base" in small.distil_claim(
        {"bert_base": results["bert_base"]})


def _parse_tables(out):
    """{"measured" | "ratio": {model: [cells]}} from the printed tables."""
    tables, current = {}, None
    for line in out.splitlines():
        if line.startswith("Measured ("):
            current = tables.setdefault("measured", {})
        elif line.startswith("Ratio to "):
            current = tables.setdefault("ratio", {})
        elif current is not None and line.startswith("model "):
            continue
        elif current is not None and line.strip() and not line.startswith("DistilBERT claim"):
            name, *cells = line.split()
            current[name] = [float(c.replace(",", "")) for c in cells]
        elif line.startswith("DistilBERT claim"):
            current = None
    return tables


def _within_rounding(printed, value, base, half, printed_half):
    """Whether `printed` can be value / base, where value and base were printed rounded to
    +-`half` and the ratio to +-`printed_half`."""
    low = max(value - half, 0) / (base + half)
    high = (value + half) / max(base - half, 1e-9)
    return low - printed_half <= printed <= high + printed_half


def _check_ratios(tables, reference):
    measured, ratios = tables["measured"], tables["ratio"]
    assert set(measured) == set(ratios)
    # Cells are rounded: parameters exact, sizes to 0.1 MB, latencies to 0.01 ms.
    halves = [0] + [0.05] * 4 + [0.005] * 6
    for name, cells in measured.items():
        assert len(cells) == len(ratios[name]) == 11, cells  # params, 4 sizes, 6 latencies
        for value, base, printed, half in zip(cells, measured[reference], ratios[name], halves):
            assert _within_rounding(printed, value, base, half, 0.0005), \
                (name, cells, ratios[name])


def test_the_small_tables_print_every_number_and_its_ratio_to_the_first_model(capsys):
    small = _small_module()
    results = {"bert_base": _row(1000, (40e6, 30e6, 15e6, 8e6), (100.0, 80.0, 50.0)),
               "bert_mini": _row(100, (5e6, 3e6, 2e6, 1e6), (10.0, 4.0, 5.0))}
    small.print_tables(["bert_base", "bert_mini"], results)
    tables = _parse_tables(capsys.readouterr().out)
    assert tables["measured"]["bert_mini"] == [100, 5.0, 3.0, 2.0, 1.0, 10.0, 15.0, 4.0, 6.0,
                                               5.0, 7.5]
    assert tables["measured"]["bert_base"][5:7] == [100.0, 150.0]
    assert tables["ratio"]["bert_mini"] == [0.1, 0.125, 0.1, 0.133, 0.125, 0.1, 0.1, 0.05,
                                            0.05, 0.1, 0.1]
    _check_ratios(tables, "bert_base")


# The tool's two paths to a usage error (USAGE_ERRORS' commands): a bound checked in
# benchmarks/cli.py (--small_threads and --small_warmup go through the same loop) and a
# FlagError of benchmarks/small.py (whose messages the tests above check one by one).
@pytest.mark.parametrize("name, message", [
    ("small_runs", "--small_runs must be at least 1, got 0"),
    ("small_models", "--small_models: unknown preset(s) 'distil_bert'; allowed: albert_base"),
])
def test_bad_small_flags_are_usage_errors_naming_the_value(usage_errors, name, message):
    result = usage_errors[name]
    assert result.returncode != 0
    assert message in result.stderr, result.stderr[-3000:]
    assert "Measured" not in result.stdout


@pytest.mark.parametrize("overrides, sequence_length, message", [
    ({"num_layer": 2}, 128,
     "--small_config does not fit preset 'bert_mini': Unknown BERT config field 'num_layer'"),
    ({"vocabulary_size": 100}, 128,
     "bert_mini would have vocabulary_size 100; the benchmark's tokenizer (bert-base-uncased's) "
     "has 30522 tokens"),
    ({}, 600, "--sequence_length must be in [3, 512] (bert_mini's max_sequence_length), got 600"),
    ({"max_sequence_length": 64}, 128,
     "--sequence_length must be in [3, 64] (bert_mini's max_sequence_length), got 128"),
])
def test_small_configs_are_checked_before_anything_is_built(overrides, sequence_length, message):
    small = _small_module()
    small.check_configs(["bert_base", "bert_mini"], {"num_layers": 2}, 128)
    with pytest.raises(small.FlagError, match=re.escape(message)):
        small.check_configs(["bert_mini"], overrides, sequence_length)


@pytest.mark.slow
def test_the_small_benchmark_measures_each_model_and_prints_consistent_ratios(tmp_path):
    """Two tiny models (the presets' layouts with small sizes) through the whole run: the
    files it sizes are there, every printed ratio is the measured value over the first
    model's, and the DistilBERT line follows from the parameter counts and file sizes."""
    folder = tmp_path / "files"
    result = subprocess.run(
        [sys.executable, TOOL, "small", "--small_models=bert_base,distil_bert_base",
         f"--results_dir={tmp_path}",
         "--small_config=num_layers=2,hidden_size=32,num_heads=2,intermediate_size=64",
         "--small_runs=4", "--small_warmup=1", "--sequence_length=32", f"--small_dir={folder}"],
        capture_output=True, text=True, env=ENV, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "random weights (sizes and latency do not depend on the weights' values)" in out
    assert "config overrides for every model (not the presets' sizes): num_layers=2" in out
    assert re.search(r"\[1/2\] bert_base: [\d,]+ parameters; SavedModel [\d.]+ MB \(its "
                     r"variables hold [\d.]+x the parameters\)", out), out
    assert re.search(r"\[2/2\] distil_bert_base: ", out), out
    tables = _parse_tables(out)
    assert list(tables["measured"]) == ["bert_base", "distil_bert_base"], out
    _check_ratios(tables, "bert_base")
    base, distil = tables["measured"]["bert_base"], tables["measured"]["distil_bert_base"]
    for name, cells in tables["measured"].items():
        sizes = [os.path.getsize(folder / f"{name}_{q}.tflite") for q in
                 ("float32", "float16", "int8")]
        assert cells[2:5] == [round(s / 1e6, 1) for s in sizes]
        assert sizes[0] > sizes[1] > sizes[2]
        assert (folder / f"{name}_saved_model" / "saved_model.pb").is_file()
        assert all(latency > 0 for latency in cells[5:])
    claim = re.search(r"distil_bert_base has ([\d.-]+)% fewer parameters than bert_base, its "
                      r"TFLite float32 file is ([\d.-]+)% smaller", out)
    assert claim, out
    assert float(claim.group(1)) == pytest.approx(100 * (1 - distil[0] / base[0]), abs=0.06)
    assert float(claim.group(2)) == pytest.approx(100 * (1 - distil[2] / base[2]), abs=1.5)
    speeds = re.search(r"TF SavedModel ([\d.]+)x, TFLite float32 ([\d.]+)x, TFLite dynamic "
                       r"int8 ([\d.]+)x", out)
    assert speeds, out
    for printed, column in zip(speeds.groups(), (5, 7, 9)):  # the p50 columns
        assert _within_rounding(float(printed), base[column], distil[column], 0.005, 0.005), \
            (printed, base, distil)
    # The JSON record: the same sizes, in bytes.
    figures = json.loads((tmp_path / "small.json").read_text())["results"]
    assert list(figures) == ["bert_base", "distil_bert_base"]
    for name, cells in tables["measured"].items():
        assert figures[name]["params"] == cells[0]
        assert figures[name]["float32"] == os.path.getsize(folder / f"{name}_float32.tflite")
