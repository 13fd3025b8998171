"""What `train_step` and `finetune` share: a peak to measure GFLOP/s against, the FLOPs of a
training step, a synthetic batch, timed `train_on_batch` rounds and keras-hub's BERT of a
kbert config."""

import time


def matmul_gflops(n):
    """GFLOP/s of an XLA-compiled float32 [n, n] x [n, n] matmul (best of 5 timed runs)."""
    import tensorflow as tf

    a = tf.random.normal((n, n))
    b = tf.random.normal((n, n))
    matmul = tf.function(lambda x, y: tf.matmul(x, y), jit_compile=True)
    matmul(a, b).numpy()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        matmul(a, b).numpy()
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9


def train_flops_per_sequence(config, sequence_length, predictions, nsp):
    """Matmul FLOPs of one training step per sequence: 3 x forward (forward + 2 backward)."""
    s, h, i, v = sequence_length, config.hidden_size, config.intermediate_size, config.vocabulary_size
    per_layer = 2 * s * h * 3 * h + 2 * s * s * h * 2 + 2 * s * h * h + 2 * s * h * i * 2
    forward = config.num_layers * per_layer
    forward += predictions * (2 * h * h + 2 * h * v)  # MLM transform + tied output
    if nsp:
        forward += 2 * h * h + 2 * h * 2  # pooler + NSP head
    return 3 * forward


def synthetic_batch(config, batch, seq, predictions):
    import numpy as np

    rng = np.random.default_rng(0)
    features = {
        "token_ids": rng.integers(1000, config.vocabulary_size, (batch, seq)).astype("int32"),
        "segment_ids": (np.arange(seq)[None] >= seq // 2).repeat(batch, 0).astype("int32"),
        "padding_mask": np.ones((batch, seq), "int32"),
        "mask_positions": np.sort(
            np.stack([rng.choice(np.arange(1, seq), predictions, replace=False) for _ in range(batch)]),
            axis=1,
        ).astype("int32"),
    }
    mask_ids = rng.integers(1000, config.vocabulary_size, (batch, predictions)).astype("int32")
    mask_weights = np.ones((batch, predictions), "float32")
    nsp = rng.integers(0, 2, (batch,)).astype("int32")
    return features, mask_ids, mask_weights, nsp


def train_steps(model, features, labels, steps, sample_weight=None):
    """Seconds for `steps` training steps: `train_on_batch` runs the XLA-compiled train
    step that `fit` runs, without the tf.data iterator, whose threads compete with XLA's on
    a small machine and add a constant that hides the models' difference."""
    start = time.perf_counter()
    for _ in range(steps):
        # Returns the loss as numpy: synchronous.
        model.train_on_batch(features, labels, sample_weight=sample_weight)
    return time.perf_counter() - start


def keras_hub_backbone(config):
    """keras-hub's `BertBackbone` with the architecture of kbert's `BertConfig` `config`."""
    import keras_hub

    return keras_hub.models.BertBackbone(
        vocabulary_size=config.vocabulary_size, num_layers=config.num_layers,
        num_heads=config.num_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size, dropout=config.dropout,
        max_sequence_length=config.max_sequence_length,
    )
