"""Fine-tuning batches grouped by length (kbert.tasks.length_groups): the buckets, the
epochs (every example once, like lengths together, random order, the same from the seed),
the stream `fit` reads (resumable), prediction in the split's order, and each family's
outputs on a batch cut to its bucket equal to the example's alone at full padding."""

import gc

import keras
import numpy as np
import pytest

from kbert import models
from kbert.tasks import length_groups
from kbert.tasks.length_groups import bucket_lengths, epoch_batches, example_lengths
from tests.models.test_backbone import EXTRA, SIZES


def _features(lengths, sequence_length, seed=0):
    rng = np.random.default_rng(seed)
    mask = np.arange(sequence_length)[None, :] < np.asarray(lengths)[:, None]
    ids = np.where(mask, rng.integers(4, 40, (len(lengths), sequence_length)), 0)
    return {"token_ids": ids.astype("int32"), "segment_ids": np.zeros_like(ids, "int32"),
            "padding_mask": mask.astype("int32")}


def test_bucket_lengths():
    assert bucket_lengths(128) == (16, 24, 32, 48, 64, 96, 128)
    assert bucket_lengths(100) == (16, 24, 32, 48, 64, 96, 100)
    assert bucket_lengths(512)[-3:] == (256, 384, 512)
    assert bucket_lengths(12) == (12,)
    # At most a third of a batch is padding past its longest example.
    buckets = bucket_lengths(384)
    assert all(b / a <= 1.5 for a, b in zip(buckets, buckets[1:]))


def test_example_lengths_is_one_past_the_last_real_token():
    features = _features([3, 8, 1], 8)
    assert example_lengths(features).tolist() == [3, 8, 1]
    features["padding_mask"][0] = 0  # an empty row still takes one position
    assert example_lengths(features).tolist() == [1, 8, 1]


def test_an_epoch_holds_each_example_at_most_once_in_batches_of_like_length():
    rng = np.random.default_rng(1)
    lengths = rng.integers(2, 129, 10_000)
    batches = epoch_batches(lengths, 32, np.random.default_rng(0))
    assert batches.shape == (312, 32)
    assert len(np.unique(batches)) == batches.size  # 16 examples sit this epoch out
    spread = np.ptp(lengths[batches], axis=1)
    shuffled = np.ptp(lengths[rng.permutation(len(lengths))[:312 * 32].reshape(312, 32)],
                      axis=1)
    assert spread.mean() < 0.1 * shuffled.mean()
    # The order is random: the batches are not sorted by length, and another epoch differs.
    longest = lengths[batches].max(axis=1)
    assert not (np.all(np.diff(longest) <= 0) or np.all(np.diff(longest) >= 0))
    again = epoch_batches(lengths, 32, np.random.default_rng(0))
    other = epoch_batches(lengths, 32, np.random.default_rng(1))
    assert np.array_equal(batches, again) and not np.array_equal(batches, other)


def test_a_bucket_merges_into_the_next_where_its_compile_costs_more_than_padding():
    # Mean length 34.4: a compile costs 25 steps of it, 860 token-rows. 48: 5 batches of 16
    # more tokens a row (80) merge into 64; 32: 90 batches of 16 more (1,440) stay.
    cut = np.array([32] * 90 + [48] * 5 + [64] * 5)
    assert length_groups.merge_rare(cut).tolist() == [32] * 90 + [64] * 10
    # A merged bucket's batches count toward the next: 16 (10) into 24, 24 (13) into 32.
    cut = np.array([16] * 10 + [24] * 3 + [32] * 87)
    assert length_groups.merge_rare(cut).tolist() == [32] * 100
    # Many batches repay their compile; without a compile cost nothing merges.
    cut = np.array([16] * 1000 + [24] * 1000)
    assert np.array_equal(length_groups.merge_rare(cut), cut)
    assert np.array_equal(length_groups.merge_rare(np.array([32] * 90 + [48] * 5 + [64] * 5),
                                                   compile_steps=0),
                          [32] * 90 + [48] * 5 + [64] * 5)
    assert length_groups.merge_rare(np.array([], np.int32)).tolist() == []


def test_the_stream_merges_rare_buckets_only_when_asked_and_resumes_at_the_same_lengths():
    rng = np.random.default_rng(5)
    lengths = np.concatenate([rng.integers(1, 17, 190), rng.integers(17, 41, 10)])
    features = _features(lengths, 40)
    labels = {"labels": np.arange(200, dtype="int32")}

    def shapes(stream, count):
        return [x["token_ids"].shape[1] for x, _ in _elements(stream, count)]

    merged = shapes(length_groups.training_stream(features, labels, 8, 40, 3, 2), 50)
    own = shapes(length_groups.training_stream(features, labels, 8, 40, 3, 2, merge=False), 50)
    assert len(set(merged)) < len(set(own))  # a shape fewer to compile, at least
    assert length_groups.merge_rare(own).tolist() == merged
    resumed = shapes(length_groups.training_stream(features, labels, 8, 40, 3, 2).skip(17), 20)
    assert resumed == merged[17:37]


def _elements(dataset, count):
    return [(x, y) for x, y in dataset.take(count).as_numpy_iterator()]


def test_the_stream_cuts_batches_to_buckets_and_resumes_where_it_stopped():
    lengths = np.random.default_rng(2).integers(1, 41, 200)
    features = _features(lengths, 40)
    labels = {"labels": np.arange(200, dtype="int32"),
              "label_weights": features["padding_mask"].astype("float32")}
    stream = length_groups.training_stream(features, labels, 8, 40, seed=3, epochs=2,
                                           token_labels=True)
    elements = _elements(stream, 60)  # 2 epochs of 25 batches, then the first again
    seen = []
    own = [min(b for b in bucket_lengths(40) if b >= lengths[y["labels"]].max())
           for _, y in elements[:50]]
    assert length_groups.merge_rare(own).tolist() == [
        x["token_ids"].shape[1] for x, _ in elements[:50]]
    for x, y in elements[:50]:
        length = x["token_ids"].shape[1]
        assert length in bucket_lengths(40)
        rows = y["labels"]
        assert length >= lengths[rows].max()
        np.testing.assert_array_equal(x["token_ids"], features["token_ids"][rows, :length])
        assert y["label_weights"].shape == (8, length)  # per-token labels cut too
        seen.append(rows)
    epoch = np.concatenate(seen[:25])
    assert len(np.unique(epoch)) == 200  # 200 // 8 batches: every example, once
    for (x, y), (x0, y0) in zip(elements[50:], elements):
        np.testing.assert_array_equal(y["labels"], y0["labels"])
    # A run resumed at step 17 reads what the killed run would have read.
    resumed = _elements(length_groups.training_stream(
        features, labels, 8, 40, seed=3, epochs=2, token_labels=True).skip(17), 10)
    for (x, y), (x0, y0) in zip(resumed, elements[17:27]):
        np.testing.assert_array_equal(y["labels"], y0["labels"])
        np.testing.assert_array_equal(x["padding_mask"], x0["padding_mask"])


class _Doubler(keras.Model):
    """A stand-in model: per token, the token id times 2 and itself; counts its traces."""

    def __init__(self):
        super().__init__(name="doubler")
        self.calls = 0

    def call(self, inputs):
        self.calls += 1
        ids = keras.ops.cast(inputs["token_ids"], "float32")
        return {"tokens": keras.ops.stack([ids * 2, ids], -1), "first": ids[:, 0]}


def test_predict_puts_outputs_back_in_order_and_to_full_length():
    lengths = [5, 30, 2, 17, 9, 1, 40]
    features = _features(lengths, 40)
    _, batches = length_groups.sorted_batches(features, 3, 40)
    assert [b["token_ids"].shape[1] for _, b in batches] == [40, 16, 16]  # 40 30 17 | 9 5 2 | 1
    model = _Doubler()
    model.compile(jit_compile=True)
    outputs = length_groups.predict(model, features, 3, 40, token_outputs=True)
    ids = features["token_ids"].astype("float32")
    np.testing.assert_array_equal(outputs["tokens"], np.stack([ids * 2, ids], -1))
    np.testing.assert_array_equal(outputs["first"], ids[:, 0])
    # One graph for every length (traced once, not compiled per length), kept for the next
    # evaluation.
    assert model.calls == 1
    length_groups.predict(model, features, 3, 40, token_outputs=True)
    assert model.calls == 1
    # The cache does not keep a model alive.
    assert model in length_groups._GRAPHS
    gc.collect()  # models of earlier tests that are garbage already leave first
    cached = len(length_groups._GRAPHS)
    del model, outputs
    gc.collect()
    assert len(length_groups._GRAPHS) == cached - 1


@pytest.mark.parametrize("family", list(models.FAMILIES))
def test_each_family_scores_an_example_in_a_cut_batch_as_alone(family):
    classes = models.FAMILIES[family]
    backbone = classes.backbone.from_config(classes.config(
        **SIZES, **EXTRA.get(family, {}), max_sequence_length=64))
    lengths = [3, 14, 9, 1]
    features = _features(lengths, 64, seed=4)
    features = {k: v for k, v in features.items() if k in backbone.input}
    (_, batch), = length_groups.sorted_batches(features, 4, 64)[1]
    assert batch["token_ids"].shape == (4, 16)
    order = np.argsort(-np.asarray(lengths), kind="stable")
    together = backbone(batch)["sequence_output"]
    for row, index in enumerate(order):
        alone = backbone({k: v[index:index + 1] for k, v in features.items()})
        n = lengths[index]
        np.testing.assert_allclose(np.asarray(together)[row, :n],
                                   np.asarray(alone["sequence_output"])[0, :n], atol=1e-5)
