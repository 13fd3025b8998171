"""Lists of inputs run in length-grouped batches, each padded to its own longest sequence,
and come back in input order; long lists show a progress bar."""

import numpy as np
import pytest

from kbert.pipelines import batching
from tests.pipelines import reference


def _sequences(lengths):
    return [batching.Sequence(np.full(n, i + 5)) for i, n in enumerate(lengths)]


class _Recorder:
    """A runner that records each batch's shape and returns, per row, its first token id
    and how many real tokens it has."""

    def __init__(self):
        self.shapes = []

    def __call__(self, features):
        self.shapes.append(features["token_ids"].shape)
        return np.stack([features["token_ids"][:, 0],
                         features["padding_mask"].sum(1)], axis=1)


def test_batches_are_grouped_by_length_and_padded_per_batch():
    lengths = [3, 40, 5, 38, 4, 41, 6, 39]
    runner = _Recorder()
    rows = batching.run(runner, _sequences(lengths), pad_id=0, batch_size=2)
    # Longest first, in pairs of similar length: each padded to its own longest member.
    assert runner.shapes == [(2, 41), (2, 39), (2, 6), (2, 4)]
    # Results in input order: row i is sequence i (ids i + 5, length lengths[i]).
    assert [tuple(r) for r in rows] == [(i + 5, n) for i, n in enumerate(lengths)]
    padded = sum(b * s for b, s in runner.shapes)
    assert padded < len(lengths) * max(lengths) * 0.6  # not all padded to the longest


def test_the_smaller_batch_goes_where_it_pads_fewer_tokens():
    """A long tail: the smaller batch at the long end (256 + 2 x 30 + 2 x 28 padded tokens,
    not 2 x 256 + 2 x 29 + 27); lengths bunched at the top: at the short end."""
    groups = batching.length_groups([256, 30, 29, 28, 27], 2)
    assert [g.tolist() for g in groups] == [[0], [1, 2], [3, 4]]
    groups = batching.length_groups([10, 1, 2, 3, 9], 2)
    assert [g.tolist() for g in groups] == [[0, 4], [3, 2], [1]]
    assert batching.length_groups([], 3) == [] and \
        [g.tolist() for g in batching.length_groups([5], 3)] == [[0]]


def test_equal_lengths_keep_input_order_and_batch_size_is_checked():
    groups = batching.length_groups([2, 2, 3, 2], 2)
    assert [g.tolist() for g in groups] == [[2, 0], [1, 3]]
    with pytest.raises(ValueError, match="batch_size"):
        batching.run(_Recorder(), _sequences([2]), pad_id=0, batch_size=0)
    with pytest.raises(ValueError, match="progress"):
        batching.run(_Recorder(), _sequences([2]), pad_id=0, progress="yes")


def test_progress_bar_on_long_lists(capsys):
    batching.run(_Recorder(), _sequences([3] * 4), pad_id=0, batch_size=2)
    assert capsys.readouterr().out == ""  # 2 batches: no bar by default
    batching.run(_Recorder(), _sequences([3] * 4), pad_id=0, batch_size=2, progress=True)
    assert "2/2" in capsys.readouterr().out
    many = batching.PROGRESS_MIN_BATCHES
    batching.run(_Recorder(), _sequences([3] * many), pad_id=0, batch_size=1)
    assert f"{many}/{many}" in capsys.readouterr().out
    batching.run(_Recorder(), _sequences([3] * many), pad_id=0, batch_size=1, progress=False)
    assert capsys.readouterr().out == ""


def test_a_list_gives_what_each_text_gives_alone(pipelines):
    """Batched and padded with texts of other lengths, each text's scores are its own."""
    pipe = pipelines("text-classification", "hf_tasks/bert_seq_single")
    texts = reference.load("text_classification")["cases"][1]["inputs"][:6]
    together = pipe(texts, top_k=None, batch_size=4)
    for text, result in zip(texts, together):
        reference.assert_same(result, pipe(text, top_k=None))
