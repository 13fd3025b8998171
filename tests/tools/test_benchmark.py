"""tools/benchmark.py pipeline: the texts it makes, its padded-to-the-longest baseline, and a
run on a few texts that prints both timings and the ratios (no timed assertions: a benchmark
is not a test)."""

import importlib.util
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


def _module():
    spec = importlib.util.spec_from_file_location(
        "benchmark_pipeline", ROOT / "tools" / "benchmark_pipeline.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    return all(importlib.util.find_spec(name) for name in ("torch", "transformers"))


@pytest.mark.slow
def test_the_pipeline_benchmark_prints_both_timings_and_the_ratios():
    result = subprocess.run([sys.executable, TOOL, "pipeline", "--pipeline_texts=40",
                             "--batch_size=8", "--seed=1"],
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
    if _has_torch_and_transformers():
        assert re.search(r"transformers pipeline \(transformers [\d.]+", out), out
        assert re.search(r"kbert / transformers in texts/s: [\d.]+ ", out), out
    else:  # said, not failed
        assert f"kbert / transformers in texts/s: skipped: {sys.executable} cannot import " \
               "torch and transformers" in out, out


def test_a_bad_batch_size_is_a_usage_error():
    result = subprocess.run([sys.executable, TOOL, "pipeline", "--batch_size=0"],
                            capture_output=True, text=True, env=ENV, timeout=300)
    assert result.returncode != 0
    assert "--batch_size must be at least 1, got 0" in result.stderr
