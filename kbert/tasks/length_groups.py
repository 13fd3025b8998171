"""Batches without padding waste: examples grouped by length, each batch cut to the shortest
of a few bucket lengths that holds its longest example (`tools/finetune.py`'s batches, and a
task model's `fit`, `evaluate` and `predict` on raw inputs: `kbert.tasks.fitting`).

Encoded splits are padded to the sequence length; most real texts are far shorter, and the
model's cost grows with the padded length. Grouping as transformers' `group_by_length`
does (its `LengthGroupedSampler`): each epoch is a fresh random permutation, cut into
mega-batches of `MEGABATCH` batches, each mega-batch sorted by length and cut into batches,
and the batches shuffled, so that a batch holds examples of like length while the order of
the data stays as random as the mega-batches allow. A batch is then cut from
the sequence length to its bucket: `bucket_lengths` gives about two lengths per doubling, so
that XLA compiles a handful of shapes, not one per batch, and at most a third of a batch is
padding; when the train step is XLA-compiled, a bucket that few of the run's batches fall
into is merged into the next longer one where its compile would cost more than the padding
that adds (`merge_rare`). Evaluation and prediction sort the split by length the same way
and put the outputs back in the split's order, padded back to the sequence length where they
are per token; on one device they run one graph for every length (`_inference`; a second
for long batches, in blocks of queries), not an XLA compile each.

The stream is a function of the seed and the run's settings (its epochs among them): a run
resumed after a kill skips the batches it has done and reads the same data in the same
order, at the same lengths, as the run that was killed.
"""

import weakref

import numpy as np
import tensorflow as tf

from kbert.layers import query_blocks

# Batches per mega-batch, as transformers' `get_length_grouped_indices` (mega_batch_mult 50).
MEGABATCH = 50
# The shortest bucket: shorter batches save little and compile more shapes.
SHORTEST = 16
# What an XLA compile of the train step costs, in steps of the run's mean bucket length
# (about 8 s for all-MiniLM-L6-v2 on 2 CPU cores: some 25 steps of 0.35 s; a step's time
# grows about linearly with its length). Measured on CPU: on a GPU, where steps are far
# shorter, a compile is worth more steps and this merges too little.
COMPILE_STEPS = 25


def bucket_lengths(sequence_length, shortest=SHORTEST):
    """The lengths batches are cut to: 16, 24, 32, 48, 64, 96, ... (a power of two and one
    and a half times it), below `sequence_length`, and `sequence_length` itself."""
    lengths, power = set(), shortest
    while power < sequence_length:
        lengths.update(n for n in (power, power * 3 // 2) if n < sequence_length)
        power *= 2
    return tuple(sorted(lengths | {sequence_length}))


def example_lengths(features):
    """Each example's length: one past its last real token (`padding_mask`)."""
    mask = np.asarray(features["padding_mask"]).astype(bool)
    last = mask.shape[1] - np.argmax(mask[:, ::-1], axis=1)
    return np.where(mask.any(axis=1), last, 1).astype(np.int32)


def bucket_of(lengths, buckets):
    """The shortest bucket that holds each length."""
    return np.asarray(buckets, np.int32)[np.searchsorted(buckets, lengths)]


def merge_rare(cut_to, compile_steps=COMPILE_STEPS):
    """`cut_to` (each batch's bucket length) with each bucket merged into the next longer one
    where its compile would cost more than the padding merging adds: its batches times the
    tokens a row gains, `count * (longer - length)`, under `compile_steps` steps of the mean
    length. Shortest first (a merged bucket's batches count toward the next); the longest
    stays."""
    cut_to = np.asarray(cut_to).copy()
    if not len(cut_to):
        return cut_to
    budget = compile_steps * cut_to.mean()
    used = sorted(set(cut_to.tolist()))
    for length, longer in zip(used, used[1:]):
        if np.sum(cut_to == length) * (longer - length) < budget:
            cut_to[cut_to == length] = longer
    return cut_to


def epoch_batches(lengths, batch_size, rng, megabatch=MEGABATCH):
    """One epoch's batches, [n // batch_size, batch_size] indices into the split: a random
    permutation, sorted by length within each mega-batch, cut into batches, the batches
    shuffled. The last `n % batch_size` examples of the permutation sit out this epoch (a
    different few each epoch), as the steps of an epoch are `n // batch_size`."""
    order = rng.permutation(len(lengths))
    size = megabatch * batch_size
    groups = [order[i:i + size] for i in range(0, len(order), size)]
    order = np.concatenate([g[np.argsort(-lengths[g], kind="stable")] for g in groups])
    steps = len(order) // batch_size
    # Drop the remainder from the shortest end of the last mega-batch's sort, not from its
    # middle: whole batches of like length stay together.
    batches = order[:steps * batch_size].reshape(steps, batch_size)
    return batches[rng.permutation(steps)]


def _cut(arrays, length, token_keys):
    return {key: value[:, :length] if key in token_keys else value
            for key, value in arrays.items()}


def training_stream(features, labels, batch_size, sequence_length, seed, epochs,
                    token_labels=False, merge=True):
    """The endless stream `fit` reads: `(features, labels)` batches grouped by length,
    `epochs` epochs of `epoch_batches` (then again from the first), each batch cut to its
    bucket, with `merge` (the train step is XLA-compiled per shape) the buckets few of the
    run's batches fall into merged into longer ones (`merge_rare`).

    Args:
        features: {name: [N, sequence_length] array} (`padding_mask` among them).
        labels: {name: array [N, ...]}.
        token_labels: the task's labels are per token: those of them shaped
            [N, sequence_length] are cut with the features.
        merge: merge rare buckets (`merge_rare`): where each shape is a compile.
    """
    lengths = example_lengths(features)
    buckets = bucket_lengths(sequence_length)
    rng = np.random.default_rng(seed)
    batches = np.concatenate([epoch_batches(lengths, batch_size, rng) for _ in range(epochs)])
    cut_to = bucket_of(lengths[batches].max(axis=1), buckets)
    if merge:
        cut_to = merge_rare(cut_to)
    gather = _gatherer(features, labels, sequence_length, token_labels)
    data = tf.data.Dataset.from_tensor_slices((batches.astype(np.int32), cut_to)).repeat()
    return data.map(gather, num_parallel_calls=tf.data.AUTOTUNE,
                    deterministic=True).prefetch(tf.data.AUTOTUNE)


def _sorted(features, batch_size, sequence_length):
    """The split sorted by length (longest first) and cut into batches: (order, each batch's
    first place in it, each batch's bucket: its first example's, the longest)."""
    lengths = example_lengths(features)
    order = np.argsort(-lengths, kind="stable")
    starts = np.arange(0, len(order), batch_size)
    return order, starts, bucket_of(lengths[order[starts]], bucket_lengths(sequence_length))


def sorted_batches(features, batch_size, sequence_length):
    """For evaluation and prediction: the split sorted by length (longest first) and cut into
    batches, each cut to its bucket: (order, [(indices, {name: array}), ...])."""
    order, starts, cut_to = _sorted(features, batch_size, sequence_length)
    out = []
    for start, length in zip(starts, cut_to):
        indices = order[start:start + batch_size]
        out.append((indices, _cut({k: np.asarray(v)[indices] for k, v in features.items()},
                                  int(length), set(features))))
    return order, out


def _gatherer(features, labels, sequence_length, token_labels):
    """(indices [B], length) -> the batch `(features, labels)` of those examples, cut to
    `length`: the features and, with `token_labels`, the labels per token."""
    label_keys = {k for k, v in labels.items()
                  if token_labels and np.ndim(v) >= 2 and np.shape(v)[1] == sequence_length}
    features = {k: tf.constant(v) for k, v in features.items()}
    labels = {k: tf.constant(v) for k, v in labels.items()}

    def gather(indices, length):
        x = _cut({k: tf.gather(v, indices) for k, v in features.items()}, length, set(features))
        y = _cut({k: tf.gather(v, indices) for k, v in labels.items()}, length, label_keys)
        return x, y

    return gather


def inference_stream(features, labels, batch_size, sequence_length, token_labels=False):
    """Evaluation batches of `(features, labels)`, in `sorted_batches`' order and lengths:
    the split sorted by length, each batch cut to its bucket, per-token labels with it."""
    order, starts, cut_to = _sorted(features, batch_size, sequence_length)
    sizes = np.diff(np.append(starts, len(order)))
    batches = tf.RaggedTensor.from_row_lengths(order.astype(np.int32), sizes.astype(np.int64))
    gather = _gatherer(features, labels, sequence_length, token_labels)
    data = tf.data.Dataset.from_tensor_slices((batches, cut_to))
    return data.map(gather).prefetch(tf.data.AUTOTUNE)


# Per model: its inference graph for batches of any length (`_inference`).
_GRAPHS = weakref.WeakKeyDictionary()


def _call_weakly(ref, long):
    def call(inputs):  # kbert's layers use keras.ops control flow: nothing to autograph
        # Long batches attend in blocks of queries, short ones the whole matrix: a graph for
        # each (never exported).
        with query_blocks.traced_for(long):
            return ref()(inputs, training=False)

    return call


def _inference(model):
    """inputs {name: array} -> `model`'s outputs. Under TensorFlow without a distribution
    strategy: a `tf.function` whose batch and length dimensions are open, traced once (twice
    where long batches come, which run in blocks: `query_blocks.traced_for`) and not
    compiled by XLA, whatever the model's `jit_compile`: evaluation runs a few batches of
    each bucket length, fewer than an XLA compile per length would repay. Elsewhere (JAX,
    Mirrored or TPU strategies): `predict_on_batch`."""
    import keras

    if (keras.backend.backend() != "tensorflow" or tf.distribute.has_strategy()
            or model.distribute_strategy is not tf.distribute.get_strategy()):
        return model.predict_on_batch
    graphs = _GRAPHS.setdefault(model, {})
    # The graphs reach the model weakly: the cache must not keep it alive.
    ref = weakref.ref(model)

    def run(inputs):
        inputs = {k: tf.convert_to_tensor(v) for k, v in inputs.items()}
        long = query_blocks.is_long(*inputs["token_ids"].shape[:2])
        key = tuple(sorted((k, v.shape.rank, v.dtype.name) for k, v in inputs.items())), long
        if key not in graphs:
            spec = {k: tf.TensorSpec([None] * v.shape.rank, v.dtype, k)
                    for k, v in inputs.items()}
            graphs[key] = tf.function(_call_weakly(ref, long), input_signature=[spec],
                                      autograph=False)
        return tf.nest.map_structure(lambda t: t.numpy(), graphs[key](inputs))

    return run


def predict(model, features, batch_size, sequence_length, token_outputs=False):
    """`model`'s outputs on every example of `features`, in their order, computed on batches
    grouped by length (`_inference`); per-token outputs (`token_outputs`) padded back with
    zeros to `sequence_length` (past each example's length, where no decoder reads them)."""
    _, batches = sorted_batches(features, batch_size, sequence_length)
    n = len(next(iter(features.values())))
    merged = None
    infer = _inference(model)
    for indices, inputs in batches:
        outputs = infer(inputs)
        flat = outputs if isinstance(outputs, dict) else {None: outputs}
        if merged is None:
            merged = {k: np.zeros((n, *(_full(np.asarray(v), sequence_length, token_outputs)
                                        .shape[1:])), np.asarray(v).dtype)
                      for k, v in flat.items()}
        for k, v in flat.items():
            merged[k][indices] = _full(np.asarray(v), sequence_length, token_outputs)
    return merged if isinstance(outputs, dict) else merged[None]


def _full(value, sequence_length, token_outputs):
    if not token_outputs or value.ndim < 2 or value.shape[1] == sequence_length:
        return value
    pad = [(0, 0), (0, sequence_length - value.shape[1])] + [(0, 0)] * (value.ndim - 2)
    return np.pad(value, pad)
