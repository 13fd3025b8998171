"""Attention over long sequences in bounded memory: the queries in blocks, one block after
another, each over every key.

Full attention holds the scores and the probabilities of every query against every key:
[B, N, S, S] floats each (at 8,192 tokens and 12 heads, 3 GiB apiece in float32). Cut into
blocks of `BLOCK` queries, a step holds [B, N, BLOCK, S]: linear in S. Each block's softmax
still runs over all its keys at once, so a block's numbers are what full attention gives its
rows (no running softmax: the keys are not cut); only the order of the steps differs.

For inference: a training step keeps the whole matrix (its gradient would hold every
block's probabilities anyway, and XLA compiles no gradient of a loop of unbounded length).
The steps run one after another through `keras.ops.scan` (a `tf.while_loop` of one
iteration at a time under TensorFlow, `lax.scan` under JAX): a map would let TensorFlow run
up to ten blocks at once and hold ten blocks' scores. Sequences shorter than `LONG` run as
one block (the full computation, unchanged).

Where the length is known when the code is traced (eagerly, under JAX, a `tf.function`
traced for one shape, as Keras' `predict` traces its first), the length chooses. A
TensorFlow graph of open shapes holds the blocks only when traced inside
`chosen_at_run_time()` (as the pipelines' runner and a task model's `predict` on texts,
`kbert.tasks.length_groups`, trace their one graph for every batch): then both ways are in
the graph and the length picks one when it runs. Traced outside it, such a graph keeps the
whole matrix: a SavedModel or TFLite export stays one path of constant-size ops, which
`kbert.untrusted.check_saved_model` can bound (the blocks pad by an amount computed from the
length, and loop); so does Keras' own `predict` on token ids once a second length relaxes
its trace to an open length.
"""

import contextlib
import threading

import keras
from keras import ops

# From this many tokens on, the queries go in blocks: under it, the whole score matrix is at
# most [B, N, 1024, 1024] (48 MiB for 12 heads), and one call is faster than a loop of them.
LONG = 1024
# Queries per block: [B, N, 256, S] scores, at 8,192 tokens and 12 heads 96 MiB a row of B.
BLOCK = 256

_tracing = threading.local()


@contextlib.contextmanager
def chosen_at_run_time():
    """Within it, a TensorFlow graph of open shapes traced by this thread holds both the
    blocks and the whole matrix, chosen by the length when it runs (`tf.cond`); outside
    it, such a graph holds the whole matrix alone."""
    before = getattr(_tracing, "at_run_time", False)
    _tracing.at_run_time = True
    try:
        yield
    finally:
        _tracing.at_run_time = before


def by_length(attend, query, per_query=(), long=None, block=None):
    """`attend(query, *per_query)` -> the context [B, S, ...] of the queries `query`
    [B, S, ...], run on the whole sequence when it is shorter than `long` (default `LONG`),
    else on blocks of `block` (default `BLOCK`) queries one after another (`in_blocks`).
    `per_query`: tensors [B, S, ...] cut along with the queries (their document ids, ...)."""
    long = LONG if long is None else long
    block = BLOCK if block is None else block
    length = ops.shape(query)[1]
    whole = lambda: attend(query, *per_query)  # noqa: E731
    blocked = lambda: in_blocks(attend, query, per_query, block)  # noqa: E731
    if isinstance(length, int):  # a static length (JAX traces each shape)
        return blocked() if length >= long else whole()
    if (keras.backend.backend() == "tensorflow" and length is not None
            and getattr(_tracing, "at_run_time", False)):
        return ops.cond(length >= long, blocked, whole)  # a graph of open shapes
    # A shape-only trace (None), a graph of open shapes traced outside `chosen_at_run_time`
    # (an export's), or another backend's symbolic length (a JAX export's): the whole
    # matrix, whose shape is the same.
    return whole()


def in_blocks(attend, query, per_query=(), block=None):
    """`attend(query block [B, block, ...], *blocks of per_query)` -> context block (of the
    query block's shape and dtype: Keras' scan under TensorFlow stacks outputs like its
    carry) for each block of `block` queries of `query` [B, S, ...], one after another; the
    last block is padded with zeros (its rows are dropped). Returns the context [B, S, ...]."""
    block = BLOCK if block is None else block
    batch, length = ops.shape(query)[0], ops.shape(query)[1]
    count = (length + block - 1) // block
    extra = count * block - length

    def cut(x):  # [B, S, ...] -> [count, B, block, ...]
        x = ops.pad(x, [[0, 0], [0, extra]] + [[0, 0]] * (len(x.shape) - 2))
        x = ops.reshape(x, (batch, count, block) + tuple(x.shape[2:]))
        return ops.moveaxis(x, 1, 0)

    def step(carry, blocks):
        return carry, attend(*blocks)

    xs = (cut(query),) + tuple(cut(x) for x in per_query)
    _, context = ops.scan(step, ops.zeros_like(xs[0][0]), xs, unroll=1)  # [count, B, block, ...]
    context = ops.moveaxis(context, 0, 1)
    context = ops.reshape(context, (batch, count * block) + tuple(context.shape[3:]))
    return context[:, :length]
