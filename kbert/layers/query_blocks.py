"""Attention over long sequences in bounded memory: the queries in blocks, one block after
another, each over every key. BERT's feed-forward network (`TransformerEncoder`, DeBERTa-v3)
runs in blocks of positions by the same rule (`by_length`, the function position-wise): its
[B, S, intermediate_size] activations (4 x hidden_size: the largest after the scores) a block
at a time, the same numbers (transformers' `chunk_size_feed_forward`). (A batch of many
short rows over the size runs in blocks of few positions: more steps, for little memory.)

Full attention holds the scores and the probabilities of every query against every key:
[B, N, S, S] floats each (at 8,192 tokens and 12 heads, 3 GiB apiece in float32). Cut into
blocks of `BLOCK` queries, a step holds [B, N, BLOCK, S]: linear in S. Each block's softmax
still runs over all its keys at once, so a block's numbers are what full attention gives its
rows (no running softmax: the keys are not cut); only the order of the steps differs.

For inference: a training step keeps the whole matrix (its gradient would hold every
block's probabilities anyway, and XLA compiles no gradient of a loop of unbounded length).
The steps run one after another through `keras.ops.scan` (a `tf.while_loop` of one
iteration at a time under TensorFlow, `lax.scan` under JAX): a map would let TensorFlow run
up to ten blocks at once and hold ten blocks' scores. What chooses is the size of the whole
matrix, B x S x S a head: from one sequence of `LONG` tokens on (or a batch of shorter ones
as large: 32 sequences of 512 tokens hold 8 times it) the queries go in blocks, of `BLOCK`
queries a row, fewer in a batch of more than `BATCH_ROWS / BLOCK` rows (so that a block holds
at most `BATCH_ROWS` query rows over the batch); a smaller matrix runs as one block (the full
computation, unchanged).

Where the length is known when the code is traced (eagerly, under JAX, a `tf.function`
traced for one shape, as Keras' `predict` traces its first), the shape chooses. A
TensorFlow graph of open shapes runs the blocks only when traced inside `traced_for(True)`:
a caller that runs batches of every shape through graphs of open shapes (the pipelines'
runner, a task model's `predict` on texts, `kbert.tasks.length_groups`) keeps two, traced
when first needed, one inside `traced_for(True)` and one inside `traced_for(False)`, and
gives each batch the one its shape asks for (`is_long`). (One graph holding both ways
behind a `tf.cond` traced every layer's attention and feed-forward network twice for every
model, used or not: a sixth more time in the pipelines' tests, on short texts that never
run the blocks.) Traced outside `traced_for`, such a graph keeps the whole matrix: a
SavedModel or TFLite export stays one path of constant-size ops, which
`kbert.untrusted.check_saved_model` can bound (the blocks pad by an amount computed from the
length, and loop); so does Keras' own `predict` on token ids once a second length relaxes
its trace to an open length.
"""

import contextlib
import threading

import keras
from keras import ops

# From a matrix of B x LONG x LONG scores a head on (one sequence of 1,024 tokens, 32 of 182),
# the queries go in blocks: under it, the whole score matrix is at most 48 MiB for 12 heads,
# and one call is faster than a loop of them.
LONG = 1024
# Queries per block: [B, N, 256, S] scores, at 8,192 tokens and 12 heads 96 MiB a row of B.
BLOCK = 256
# Query rows of a block over the whole batch, at most: a batch of more than 16 rows has blocks
# of fewer than BLOCK queries (32 rows of 512 tokens: blocks of 128, 96 MiB for 12 heads); a
# batch of more than BATCH_ROWS rows, blocks of one query.
BATCH_ROWS = 16 * BLOCK

_tracing = threading.local()


def is_long(batch, length):
    """Whether a batch of `batch` rows of `length` tokens runs in blocks: B x S x S from
    `LONG` x `LONG` on (ints: a batch's shape, known outside the graph)."""
    return batch * length * length >= LONG * LONG


@contextlib.contextmanager
def traced_for(long):
    """Within it, a TensorFlow graph of open shapes traced by this thread runs in blocks
    (`long` true: for batches `is_long` says are long) or whole (false); outside it, such a
    graph holds the whole matrix."""
    before = getattr(_tracing, "long", None)
    _tracing.long = bool(long)
    try:
        yield
    finally:
        _tracing.long = before


def by_length(attend, query, per_query=(), long=None, block=None):
    """`attend(query, *per_query)` -> the context [B, S, ...] of the queries `query`
    [B, S, ...], run on the whole sequence when B x S x S is under `long` x `long` (default
    `LONG`), else on blocks of queries one after another (`in_blocks`): `block` (default
    `BLOCK`) a row, fewer where B x `block` passes `BATCH_ROWS` (`rows_per_block`). A
    known length of `long` or more with an open batch runs in blocks of `block`. A graph of
    open shapes follows its caller's choice instead (`long` does not apply): in blocks
    inside `traced_for(True)` (the caller chose by `is_long`, with `LONG`), else whole.
    `per_query`: tensors [B, S, ...] cut along with the queries (their document ids, ...)."""
    long = LONG if long is None else long
    block = BLOCK if block is None else block
    batch, length = ops.shape(query)[0], ops.shape(query)[1]
    whole = lambda: attend(query, *per_query)  # noqa: E731
    if isinstance(length, int) and isinstance(batch, int):  # static (JAX traces each shape)
        if batch * length * length < long * long:
            return whole()
        return in_blocks(attend, query, per_query, rows_per_block(batch, block))
    if isinstance(length, int) and length >= long:
        # A known long length, an open batch (Keras' predict relaxes the batch of its last,
        # smaller one): blocks of `block` queries, as for one row, whatever the batch.
        return in_blocks(attend, query, per_query, block)
    if (keras.backend.backend() == "tensorflow" and length is not None and batch is not None
            and getattr(_tracing, "long", None)):  # a graph of open shapes for long batches
        return in_blocks(attend, query, per_query, rows_per_block(batch, block))
    # A shape-only trace (None), a graph of open shapes for short batches or traced outside
    # `traced_for` (an export's), or another backend's symbolic length (a JAX export's): the
    # whole matrix, whose shape is the same.
    return whole()


def rows_per_block(batch, block=None):
    """Queries a block of `batch` rows takes: `block` (default `BLOCK`), fewer where `batch`
    x `block` passes `BATCH_ROWS` (at least one). `batch`: an int, or a scalar tensor of a
    graph of open shapes."""
    block = BLOCK if block is None else block
    if isinstance(batch, int):
        return max(1, min(block, BATCH_ROWS // batch))
    rows = ops.floor_divide(BATCH_ROWS, ops.maximum(ops.cast(batch, "int32"), 1))
    return ops.clip(rows, 1, block)


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
