import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes over ~20 s; still runs in CI")


TINY = dict(
    vocabulary_size=97,
    num_layers=2,
    hidden_size=32,
    num_heads=4,
    intermediate_size=64,
    max_sequence_length=24,
)


def random_batch(batch=4, seq=16, vocab=97, predictions=5, seed=0, padded=True):
    """Features and labels in kbert's names, with some padding and padded predictions."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(seq // 2, seq + 1, batch) if padded else np.full(batch, seq)
    padding_mask = (np.arange(seq)[None] < lengths[:, None]).astype("int32")
    token_ids = rng.integers(5, vocab, (batch, seq)).astype("int32") * padding_mask
    segment_ids = ((np.arange(seq)[None] >= lengths[:, None] // 2) * padding_mask).astype("int32")
    positions = np.stack([np.sort(rng.choice(l, predictions, replace=False)) for l in lengths])
    mask_weights = np.ones((batch, predictions), "float32")
    mask_weights[0, -2:] = 0.0  # padded predictions
    features = {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": padding_mask,
        "mask_positions": positions.astype("int32"),
    }
    labels = {
        "mask_ids": rng.integers(5, vocab, (batch, predictions)).astype("int32"),
        "mask_weights": mask_weights,
        "next_sentence_labels": rng.integers(0, 2, (batch,)).astype("int32"),
    }
    return features, labels
