"""tools/benchmark.py modern_bert's inputs: the pipeline benchmark's texts as token ids, and the
batch orders of both sides, the long forward's warm-up (the timings themselves are the
benchmark's, not a test's)."""

import itertools

import numpy as np

from benchmarks import modern_bert as benchmark_modern_bert
from benchmarks import pipeline as benchmark_pipeline
from benchmarks.reference import transformers_modern_bert as peer


def test_the_texts_are_the_pipeline_benchmarks_lengths_as_ids():
    ids = benchmark_modern_bert.text_ids(300, seed=3, cls_id=7, sep_id=8)
    words = ["".join(w) for w in itertools.product("abcdefghijklmnopqrstuvwxyz", repeat=3)]
    texts = benchmark_pipeline.make_texts(words, 300, 3)
    assert len(ids) == len(texts) == 300
    for row, text in zip(ids, texts):
        assert row[0] == 7 and row[-1] == 8
        # One id per word and one per full stop.
        assert len(row) == 2 + len(text.split()) + text.count(".")
        assert row.count(benchmark_modern_bert.PERIOD_ID) == text.count(".")
    lengths = np.array([len(r) for r in ids])
    assert np.median(lengths) < 30 and lengths.max() > 400  # mixed: mostly short, some long


def test_batch_orders():
    ids = [[0] * n for n in (3, 9, 1, 9, 5)]
    assert peer.batches(ids, 2, grouped=False) == [[0, 1], [2, 3], [4]]
    assert peer.batches(ids, 2, grouped=True) == [[1, 3], [4, 0], [2]]
    # Both sides cut the same batches (the reference's copy of kbert's rule).
    from kbert.pipelines import batching

    rng = np.random.default_rng(0)
    for count, size in ((5, 2), (100, 32), (67, 8), (64, 8)):
        ids = [[0] * n for n in rng.pareto(1.5, count).astype(int) * 10 + 3]
        want = batching.length_groups([len(row) for row in ids], size)
        assert peer.batches(ids, size, grouped=True) == [g.tolist() for g in want]
    assert peer.long_ids(6, 1, 2) == [1, 1000, 1001, 1002, 1003, 2]


def test_the_long_forward_warms_up_the_graph_it_runs_on_a_small_batch():
    """The warm-up runs the runner's graph the timed call runs (long batches', in blocks of
    queries, or short ones'), on a batch of few tokens."""
    from kbert.layers import query_blocks

    for rows, length in ((1, 8192), (32, 512), (1, 1024), (1, 300), (4, 100)):
        warm = np.array(benchmark_modern_bert.warm_up_shape(rows, length, 7))
        assert (warm == 7).all() and warm.shape[1] <= length
        assert query_blocks.is_long(*warm.shape) == query_blocks.is_long(rows, length)
        assert warm.size <= max(16, query_blocks.LONG ** 2 // min(length, query_blocks.LONG))
