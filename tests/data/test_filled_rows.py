"""`PairBuilder(fill_rows=True)`: ModernBERT's packed sequences, every row full."""

import numpy as np
import pytest

from kbert.data.pairs import PairBuilder

CLS, SEP, PAD = 1, 2, 0


def documents():
    rng = np.random.default_rng(0)
    return [[rng.integers(10, 99, size=n) for n in sizes]
            for sizes in ([3, 5], [7], [2, 2, 9], [30], [4])]


def test_documents_are_one_stream_cut_into_full_rows():
    builder = PairBuilder(16, "none", CLS, SEP, PAD, short_seq_prob=0.5,
                          pack_across_documents=True, fill_rows=True)
    rows = list(builder.examples(documents()))
    stream = np.concatenate([r["token_ids"][r["padding_mask"] > 0] for r in rows])
    expected = np.concatenate([np.concatenate([[CLS], *d, [SEP]]) for d in documents()])
    np.testing.assert_array_equal(stream, expected)  # nothing lost, reordered or truncated
    assert all(r["padding_mask"].all() for r in rows[:-1])  # full rows (short_seq_prob unused)
    last = rows[-1]
    assert last["padding_mask"].sum() == len(expected) % 16
    assert (last["token_ids"][last["padding_mask"] == 0] == PAD).all()
    assert all(not r["segment_ids"].any() for r in rows)
    # The 30-token document runs on over the row boundary.
    assert len(rows) == -(-len(expected) // 16)


def test_fill_rows_needs_packing_across_documents():
    with pytest.raises(ValueError, match="fill_rows .* needs pack_across_documents=True"):
        PairBuilder(16, "none", CLS, SEP, PAD, fill_rows=True)
