"""Running a model on many sequences: batches of similar length, each padded to its own
longest sequence, results handed back in input order, with a progress bar on long lists.

Why length-grouped: a list of texts of mixed lengths padded to its longest wastes most of
the compute on padding; sorted by length, each batch pads only to its own longest member.
Attention masks keep the padding out of every real position's result, so a sequence's
outputs do not depend on its batch.
"""

import numpy as np

from kbert.tasks.datasets import check_int

DEFAULT_BATCH_SIZE = 32
# progress=None shows a bar from this many batches on.
PROGRESS_MIN_BATCHES = 8


class Sequence:
    """One model input: `token_ids` and `segment_ids` (int32 [length]), and for masked-LM
    heads `mask_positions` (int32 [masks])."""

    __slots__ = ("token_ids", "segment_ids", "mask_positions")

    def __init__(self, token_ids, segment_ids=None, mask_positions=None):
        self.token_ids = np.asarray(token_ids, np.int32)
        self.segment_ids = (np.zeros_like(self.token_ids) if segment_ids is None
                            else np.asarray(segment_ids, np.int32))
        self.mask_positions = (None if mask_positions is None
                               else np.asarray(mask_positions, np.int32))

    def __len__(self):
        return len(self.token_ids)


def length_groups(lengths, batch_size):
    """Index arrays of the batches: the sequences sorted by length (longest first; equal
    lengths in input order), cut every `batch_size`, the one smaller batch (where the count
    does not divide) at the long end or the short end, whichever pads fewer tokens (rows x
    the batch's longest, summed; the long end where equal). Real lengths have a long tail,
    where neighbours differ most: there the smaller batch pads least (2,000 real sentences
    in batches of 32: 3.5% fewer tokens than at the short end, and about a fifth less
    attention, which grows with the square of the length)."""
    lengths = np.asarray(lengths, np.int64)
    order = np.argsort(-lengths, kind="stable")
    count = len(order)
    options = []
    for first in dict.fromkeys((count % batch_size or batch_size, batch_size)):
        cuts = [0] + list(range(min(first, count), count, batch_size)) + [count]
        groups = [order[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]
        options.append((sum(len(g) * int(lengths[g[0]]) for g in groups), groups))
    return min(options, key=lambda option: option[0])[1]


def pad_batch(sequences, pad_id):
    """The model inputs of `sequences`, padded to the longest of them: `token_ids`,
    `segment_ids`, `padding_mask` int32 [B, S] (and `mask_positions` [B, P], 0-padded)."""
    length = max(len(s) for s in sequences)
    batch = len(sequences)
    token_ids = np.full((batch, length), pad_id, np.int32)
    segment_ids = np.zeros((batch, length), np.int32)
    padding_mask = np.zeros((batch, length), np.int32)
    for row, s in enumerate(sequences):
        token_ids[row, :len(s)] = s.token_ids
        segment_ids[row, :len(s)] = s.segment_ids
        padding_mask[row, :len(s)] = 1
    features = {"token_ids": token_ids, "segment_ids": segment_ids,
                "padding_mask": padding_mask}
    if sequences[0].mask_positions is not None:
        masks = max(len(s.mask_positions) for s in sequences)
        positions = np.zeros((batch, masks), np.int32)
        for row, s in enumerate(sequences):
            positions[row, :len(s.mask_positions)] = s.mask_positions
        features["mask_positions"] = positions
    return features


def _rows(outputs, count):
    """Model outputs (an array or a dict of arrays, batch first) -> one entry per row."""
    if isinstance(outputs, dict):
        return [{k: v[i] for k, v in outputs.items()} for i in range(count)]
    return [outputs[i] for i in range(count)]


def run(runner, sequences, pad_id, batch_size=DEFAULT_BATCH_SIZE, progress=None):
    """`runner(features)` on all `sequences` in length-grouped batches.

    Args:
        runner: features dict (see `pad_batch`) -> numpy outputs, batch first.
        sequences: list of `Sequence`.
        pad_id: the tokenizer's padding id.
        batch_size: sequences per model call.
        progress: True / False, or None: a `keras.utils.Progbar` (one step per batch) from
            `PROGRESS_MIN_BATCHES` batches on.

    Returns:
        one output row per sequence, in the order of `sequences`; rows of per-token outputs
        keep their batch's padded length (cut them to `len(sequence)`).
    """
    batch_size = check_int("batch_size", batch_size, 1)
    if progress not in (None, True, False):
        raise ValueError(f"`progress` must be True, False or None (automatic), got "
                         f"{progress!r}.")
    groups = length_groups([len(s) for s in sequences], batch_size)
    show = progress if progress is not None else len(groups) >= PROGRESS_MIN_BATCHES
    bar = None
    if show and groups:
        import keras

        bar = keras.utils.Progbar(len(groups), unit_name="batch")
    results = [None] * len(sequences)
    for step, group in enumerate(groups):
        members = [sequences[i] for i in group]
        for i, row in zip(group, _rows(runner(pad_batch(members, pad_id)), len(members))):
            results[i] = row
        if bar is not None:
            bar.update(step + 1)
    return results
