"""Layer-wise linear probes on constructed features: above chance where a layer holds the
label, at chance where it does not and where the labels are shuffled."""

import numpy as np
import pytest

from kbert.analysis import ProbeData, probe_layers
from kbert.analysis.probing import split

SENTENCES, PER_SENTENCE = 80, 5


def constructed(seed=0):
    """Three 'layers' of 8 features for 400 tokens of 80 sentences, 2 balanced classes:
    layer 0 is noise, layer 1 moves feature 0 by the class, layer 2 by twice as much."""
    rng = np.random.default_rng(seed)
    count = SENTENCES * PER_SENTENCE
    labels = rng.permutation(np.arange(count) % 2)
    features = rng.normal(size=[3, count, 8]).astype(np.float32)
    features[1, :, 0] += 2.5 * labels
    features[2, :, 0] += 5.0 * labels
    return ProbeData(features, labels, np.arange(count) // PER_SENTENCE, ["a", "b"])


def test_probe_finds_the_layers_that_hold_the_label():
    result = probe_layers(constructed(), test_fraction=0.25, seed=0)
    assert (result.train_count, result.test_count) == (300, 100)
    assert abs(result.majority - 0.5) < 0.15
    # Noise: within 3 standard deviations of chance for 100 tokens (0.05 each).
    assert abs(result.accuracy[0] - 0.5) < 0.15, result.accuracy
    assert result.accuracy[1] > 0.8 and result.accuracy[2] > 0.95, result.accuracy
    assert result.best_layer == 2
    table = result.table().splitlines()
    assert table[2].startswith("| embeddings |") and table[4].startswith("| layer 2 |")
    assert table[-1] == f"| majority class | {result.majority:.3f} |"


def test_shuffled_labels_give_chance_on_every_layer():
    data = constructed()
    data.labels = np.random.default_rng(5).permutation(data.labels)
    result = probe_layers(data, seed=0)
    for accuracy in result.accuracy:
        assert abs(accuracy - 0.5) < 0.15, result.accuracy


def test_split_keeps_a_sentence_on_one_side():
    groups = np.arange(SENTENCES * PER_SENTENCE) // PER_SENTENCE
    held = split(groups, 0.25, seed=3)
    assert held.sum() == 100
    for group in range(SENTENCES):
        assert len(set(held[groups == group])) == 1
    with pytest.raises(ValueError, match="between 0 and 1"):
        split(groups, 1.5)
    with pytest.raises(ValueError, match="at least 2 texts"):
        split(np.zeros(5), 0.25)
