"""ModernBERT's attention arithmetic: rotary positions, and sliding-window attention in
chunks, so that a window layer's cost and memory grow linearly with the sequence."""

import numpy as np
from keras import ops

from kbert.layers import query_blocks

# Added to the scores of the keys outside a window (as `EncoderBlock._attend` adds to padded
# keys): exp() of it is exactly 0 next to any real score.
FAR = -1e9


def rotary(x, theta, positions=None):
    """`x` [B, S, N, D] with its positions turned in (transformers' `rotate_half` form: unit
    d pairs with unit d + D/2, frequency theta^(-2d/D) at position s), in float32 and back to
    `x`'s dtype. `positions`: int [B, S] (each token's position in its document,
    `document_runs`); `None`: 0, 1, ..., S - 1 in every row."""
    size = x.shape[-1]
    inverse = 1.0 / theta ** (np.arange(0, size, 2, dtype="float32") / size)  # [D/2]
    inverse = ops.convert_to_tensor(inverse.astype("float32"))
    if positions is None:
        positions = ops.cast(ops.arange(ops.shape(x)[1]), "float32")  # [S]
        angles = positions[:, None] * inverse[None]
        angles = ops.concatenate([angles, angles], axis=-1)[None, :, None, :]  # [1, S, 1, D]
    else:
        angles = ops.cast(positions, "float32")[:, :, None] * inverse[None, None]  # [B, S, D/2]
        angles = ops.concatenate([angles, angles], axis=-1)[:, :, None, :]  # [B, S, 1, D]
    y = ops.cast(x, "float32")
    half = size // 2
    turned = ops.concatenate([-y[..., half:], y[..., :half]], axis=-1)
    return ops.cast(y * ops.cos(angles) + turned * ops.sin(angles), x.dtype)


def document_runs(document_ids):
    """Packed documents from `document_ids` int [B, S] (a document: a run of equal ids, as
    ModernBERT's cumulative sequence lengths cut a packed row).

    Returns: (runs, positions), int32 [B, S] each: the document's number in its row (1, 1,
        2, 2, 2, ...; non-decreasing), and the token's position from its document's first
        token (0, 1, 0, 1, 2, ...: where ModernBERT's rotary positions restart).
    """
    ids = ops.cast(document_ids, "int32")
    changes = ops.cast(ops.not_equal(ids[:, 1:], ids[:, :-1]), "int32")
    runs = ops.cumsum(ops.concatenate([ops.ones_like(ids[:, :1]), changes], axis=1), axis=1)
    shape = ops.shape(ids)
    # The runs of all rows as one sorted vector: each row's above the last row's.
    offsets = ops.arange(shape[0], dtype="int32")[:, None] * (shape[1] + 1)
    flat = ops.reshape(runs + offsets, (-1,))
    first = ops.cast(ops.searchsorted(flat, flat, side="left"), "int32")  # its run's start
    positions = ops.arange(ops.shape(flat)[0], dtype="int32") - first
    return runs, ops.reshape(positions, shape)


def document_bias(runs, allowed=None):
    """float32 [B, 1, S, S]: 0 where query i and key j are of the same document (`runs`
    [B, S] from `document_runs`) and `allowed` [S, S] (bool; `None`: all) holds, `FAR`
    elsewhere."""
    same = ops.equal(runs[:, :, None], runs[:, None, :])  # [B, S, S]
    if allowed is not None:
        same = ops.logical_and(same, allowed[None])
    return ops.where(same, 0.0, FAR)[:, None]


def window_bias(length, radius):
    """[length, length] float32: 0 where |i - j| <= radius, `FAR` elsewhere (the whole
    matrix: the explicit path's and the reference's)."""
    index = ops.arange(length)
    distance = ops.abs(index[:, None] - index[None, :])
    return ops.where(distance <= radius, 0.0, FAR)


def _chunk_bias(radius):
    """[C, 3C] float32 with C = radius: 0 where query a of chunk k may see key b of chunks
    k-1, k, k+1 (|a - (b - C)| <= radius), `FAR` elsewhere. The same for every chunk."""
    a = np.arange(radius)[:, None]
    b = np.arange(3 * radius)[None, :]
    return np.where(np.abs(a - (b - radius)) <= radius, 0.0, FAR).astype("float32")


def _neighbours(x, chunk, count):
    """[B, S, ...] padded by one chunk each side (and up to `count` chunks) -> [B * count,
    3 * chunk, ...]: for each chunk, the keys of itself and of its neighbours."""
    trailing = x.shape[2:]
    x = ops.reshape(x, (ops.shape(x)[0], count + 2, chunk) + tuple(trailing))
    x = ops.concatenate([x[:, :-2], x[:, 1:-1], x[:, 2:]], axis=2)  # [B, n, 3C, ...]
    return ops.reshape(x, (-1, 3 * chunk) + tuple(trailing))


def windowed_attention(attend, query, key, value, padding_mask, radius, training, runs=None):
    """Sliding-window attention of `query` (already scaled) over `key`, `value` [B, S, N, D]:
    query i sees the real keys j with |i - j| <= `radius` (and, given `runs` [B, S] from
    `document_runs`, only those of its own document).

    The sequence is cut into chunks of `radius` tokens; each chunk attends to its own keys and
    its two neighbours' (3 * radius keys) through `attend` (`EncoderBlock._attend`, fused where
    the backend can), so the scores are [B * S / radius, N, radius, 3 * radius]: linear in S.

    Returns: the context [B, S, N, D].
    """
    chunk = radius
    batch, length = ops.shape(query)[0], ops.shape(query)[1]
    count = (length + chunk - 1) // chunk
    heads, size = query.shape[2], query.shape[3]

    def padded(x, before):
        """`x` [B, S, ...] with `before` zeros in front and zeros after it up to `before +
        count * chunk + before` positions (the last chunk filled, then `before` more):
        padded by constants and cut (a graph's Pad has constant amounts, as a checked
        SavedModel needs: `kbert.untrusted`), never by the computed remainder."""
        rest = [[0, 0]] * (len(x.shape) - 2)
        x = ops.pad(x, [[0, 0], [before, chunk + before]] + rest)
        return x[:, :before + count * chunk + before]

    query = ops.reshape(padded(query, 0), (-1, chunk, heads, size))  # [B * n, C, N, D]
    key = _neighbours(padded(key, chunk), chunk, count)  # [B * n, 3C, N, D]
    value = _neighbours(padded(value, chunk), chunk, count)
    if padding_mask is None:
        padding_mask = ops.ones((batch, length), "int32")
    valid = padded(ops.cast(padding_mask, "int32"), chunk)  # 0 past both ends
    valid = _neighbours(valid, chunk, count)  # [B * n, 3C]
    bias = ops.convert_to_tensor(_chunk_bias(radius))[None, None]  # [1, 1, C, 3C]
    if runs is not None:
        query_runs = ops.reshape(padded(runs, 0), (-1, chunk))
        key_runs = _neighbours(padded(runs, chunk), chunk, count)  # [B * n, 3C]
        same = ops.equal(query_runs[:, :, None], key_runs[:, None, :])  # [B * n, C, 3C]
        bias = ops.where(ops.logical_and(same, ops.equal(bias[0], 0.0)), 0.0, FAR)[:, None]
    context = attend(query, key, value, valid, training, bias=bias)  # [B * n, C, N, D]
    context = ops.reshape(context, (batch, count * chunk, heads, size))
    return context[:, :length]


def global_attention(attend, query, key, value, padding_mask, training, runs):
    """Global attention of `query` (already scaled) over `key`, `value` [B, S, N, D] where
    each query sees the real keys of its own document (`runs` [B, S] from `document_runs`),
    through `attend` (`EncoderBlock._attend`): the [B, 1, rows, S] bias of the queries' rows
    only, those of a block at a time on long sequences (`query_blocks.by_length`).

    Returns: the context [B, S, N, D].
    """
    def rows(query_rows, query_runs):
        same = ops.equal(query_runs[:, :, None], runs[:, None, :])  # [B, rows, S]
        # The rows that pad the last block (run 0: real runs count from 1) see every key, so
        # that no row is all FAR (-inf in float16: a NaN row, dropped but in the gradient).
        same = ops.logical_or(same, ops.equal(query_runs, 0)[:, :, None])
        bias = ops.where(same, 0.0, FAR)[:, None]
        return attend(query_rows, key, value, padding_mask, training, bias=bias)

    return query_blocks.by_length(rows, query, (runs,))
