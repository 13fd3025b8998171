import numpy as np
import pytest

from kbert.data.pairs import PairBuilder, truncate_pair

CLS, SEP, PAD = 2, 3, 0


def synthetic_documents(num_docs=40, seed=0):
    """Token ids are unique: id -> (document, position in the document)."""
    rng = np.random.default_rng(seed)
    docs, where, next_id = [], {}, 10
    for d in range(num_docs):
        doc, position = [], 0
        for _ in range(rng.integers(1, 12)):
            n = int(rng.integers(1, 30))
            sentence = np.arange(next_id, next_id + n)
            for t in sentence:
                where[int(t)] = (d, position)
                position += 1
            next_id += n
            doc.append(sentence)
        docs.append(doc)
    return docs, where


def build(sentence_task, docs, **kwargs):
    builder = PairBuilder(64, sentence_task, CLS, SEP, PAD, seed=1, **kwargs)
    return list(builder.examples(docs))


def segments(example):
    ids = example["token_ids"][example["padding_mask"] == 1]
    assert ids[0] == CLS and ids[-1] == SEP
    seps = np.flatnonzero(ids == SEP)
    if len(seps) == 1:
        return ids[1:-1], None
    a, b = ids[1 : seps[0]], ids[seps[0] + 1 : seps[1]]
    expected_segments = np.r_[np.zeros(len(a) + 2), np.ones(len(b) + 1)]
    np.testing.assert_array_equal(example["segment_ids"][: len(ids)], expected_segments)
    return a, b


def test_nsp_pairs():
    docs, where = synthetic_documents()
    examples = build("nsp", docs)
    assert len(examples) > 50
    for ex in examples:
        assert ex["token_ids"].shape == (64,) and ex["padding_mask"].sum() <= 64
        assert np.all(ex["token_ids"][ex["padding_mask"] == 0] == PAD)
        a, b = segments(ex)
        assert len(a) and len(b)
        doc_a = {where[int(t)][0] for t in a}
        doc_b = {where[int(t)][0] for t in b}
        assert len(doc_a) == 1 and len(doc_b) == 1
        position_a = [where[int(t)][1] for t in a]
        position_b = [where[int(t)][1] for t in b]
        assert position_a == sorted(position_a) and position_b == sorted(position_b)
        if ex["next_sentence_labels"] == 0:  # a real continuation: same document, B after A
            assert doc_a == doc_b and max(position_a) < min(position_b)
        else:
            assert doc_a != doc_b


def test_sop_pairs():
    docs, where = synthetic_documents()
    for ex in build("sop", docs):
        a, b = segments(ex)
        assert {where[int(t)][0] for t in a} == {where[int(t)][0] for t in b}
        a_first = where[int(a[0])][1] < where[int(b[0])][1]
        assert a_first == (ex["next_sentence_labels"] == 0)


def test_single_segment_packs_whole_sentences():
    docs, where = synthetic_documents()
    sentence_starts = {int(s[0]) for doc in docs for s in doc}
    examples = build("none", docs, short_seq_prob=0.0)
    for ex in examples:
        a, b = segments(ex)
        assert b is None and "next_sentence_labels" not in ex
        assert int(a[0]) in sentence_starts  # starts on a sentence boundary
        assert len({where[int(t)][0] for t in a}) == 1
    total = sum(len(s) for doc in docs for s in doc)
    # Only sentences longer than the room get cut: nearly every token is used.
    assert sum(int(ex["padding_mask"].sum()) - 2 for ex in examples) > 0.95 * total


def test_short_sequences():
    docs, _ = synthetic_documents(200)
    builder = PairBuilder(64, "nsp", CLS, SEP, PAD, short_seq_prob=1.0, seed=0)
    long_builder = PairBuilder(64, "nsp", CLS, SEP, PAD, short_seq_prob=0.0, seed=0)
    short = [ex["padding_mask"].sum() for ex in builder.examples(docs)]
    full = [ex["padding_mask"].sum() for ex in long_builder.examples(docs)]
    assert np.mean(short) < np.mean(full) - 5


def original_truncate(a, b, max_tokens, rng):
    """google-research/bert's truncate_seq_pair, token by token."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_tokens:
        trunc = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del trunc[0]
        else:
            trunc.pop()
    return a, b


def test_truncation_keeps_the_original_lengths():
    rng = np.random.default_rng(0)
    for _ in range(500):
        la, lb, m = (int(x) for x in rng.integers(1, 60, 3))
        a, b = np.arange(la), np.arange(100, 100 + lb)
        ta, tb = truncate_pair(a, b, m, rng)
        oa, ob = original_truncate(a, b, m, rng)
        assert (len(ta), len(tb)) == (len(oa), len(ob)), (la, lb, m)
        for t, full in ((ta, a), (tb, b)):  # a contiguous piece of the original
            if len(t):
                start = int(np.flatnonzero(full == t[0])[0])
                np.testing.assert_array_equal(full[start : start + len(t)], t)


def test_one_megabyte_sentence_truncates_fast():
    builder = PairBuilder(128, "nsp", CLS, SEP, PAD, seed=0)
    doc = [np.arange(10, 250_010), np.arange(300_000, 300_050)]
    examples = list(builder.examples([doc]))
    assert examples and all(ex["padding_mask"].sum() <= 128 for ex in examples)


def test_bad_arguments():
    with pytest.raises(ValueError, match="Unknown sentence_task 'mlm'. Allowed: nsp, sop, none"):
        PairBuilder(64, "mlm", CLS, SEP, PAD)
    with pytest.raises(ValueError, match="sequence_length must be an integer >= 5, got 4"):
        PairBuilder(4, "nsp", CLS, SEP, PAD)


def test_packing_across_documents_fills_every_example():
    """RoBERTa's FULL-SENTENCES: the stream of all documents' sentences, in order, cut at
    sentence boundaries, a [SEP] where a document ends inside a segment; every example but
    the last is full (the next sentence would not fit), and no token is lost."""
    docs, where = synthetic_documents()
    examples = build("none", docs, short_seq_prob=0.0, pack_across_documents=True)
    stream, fills = [], []
    sentence_starts = {int(s[0]) for doc in docs for s in doc}
    sentence_lengths = {int(s[0]): len(s) for doc in docs for s in doc}
    for ex in examples:
        ids = ex["token_ids"][ex["padding_mask"] == 1]
        assert ids[0] == CLS and ids[-1] == SEP and "next_sentence_labels" not in ex
        assert not ex["segment_ids"].any()
        inner = ids[1:-1]
        assert int(inner[0]) in sentence_starts and inner[0] != SEP
        parts = np.split(inner, np.flatnonzero(inner == SEP))
        parts = [parts[0]] + [p[1:] for p in parts[1:]]  # without the separators
        documents = [where[int(p[0])][0] for p in parts]
        assert documents == list(range(documents[0], documents[0] + len(parts)))
        assert all(where[int(p[0])][1] == 0 for p in parts[1:])  # a document's start
        stream.extend(inner[inner != SEP].tolist())
        fills.append(len(inner))
    assert stream == [int(t) for doc in docs for s in doc for t in s]
    # Full: each example but the last leaves less room than the sentence that follows it.
    position = 0
    for fill, ex in zip(fills[:-1], examples[:-1]):
        position += int((ex["token_ids"][1:fill + 1] != SEP).sum())
        following = sentence_lengths[stream[position]]
        boundary = where[stream[position]][1] == 0  # a [SEP] would come before it
        assert fill + boundary + following > 62, (fill, boundary, following)
    assert sum(fill < 62 for fill in fills[:-1]) > 10  # the check above can fail
    # Packed per document, a document's last example is short: more examples for the tokens.
    assert len(examples) < len(build("none", docs, short_seq_prob=0.0))
    with pytest.raises(ValueError, match="pack_across_documents packs one segment: it needs "
                                         "sentence_task 'none', got 'nsp'"):
        PairBuilder(64, "nsp", CLS, SEP, PAD, pack_across_documents=True)


def _inner_tokens(examples):
    """The tokens of single-segment examples, without [CLS], [SEP] and padding."""
    tokens = []
    for ex in examples:
        ids = ex["token_ids"][ex["padding_mask"] == 1]
        assert ids[0] == CLS and ids[-1] == SEP and len(ids) <= 64
        tokens.extend(ids[1:-1][ids[1:-1] != SEP].tolist())
    return tokens


@pytest.mark.parametrize("pack_across_documents", [False, True])
def test_a_sentence_longer_than_a_segment_is_split_not_cut(pack_across_documents):
    """sentence_task "none" holds whole sentences: one longer than the 62 tokens of a segment
    goes in pieces of 62 (the last shorter), every token kept in order, and is counted."""
    long = np.arange(1000, 1200)  # 200 tokens: 62 + 62 + 62 + 14
    docs = [[np.arange(10, 20), long, np.arange(20, 25)], [np.arange(30, 40)]]
    builder = PairBuilder(64, "none", CLS, SEP, PAD, short_seq_prob=0.0, seed=0,
                          pack_across_documents=pack_across_documents)
    examples = list(builder.examples(docs))
    assert _inner_tokens(examples) == [int(t) for doc in docs for s in doc for t in s]
    fills = [int(ex["padding_mask"].sum()) - 2 for ex in examples]
    assert fills[1:4] == [62, 62, 62], fills  # the first sentence alone: 10 + 62 > 62
    assert builder.statistics["sentences_split"] == 1
    assert builder.statistics["tokens_truncated"] == builder.statistics["tokens_dropped"] == 0


def test_sentence_pairs_truncate_as_the_original_and_count_it():
    """NSP / SOP follow the original's truncate_seq_pair (a long sentence included): every
    token of a document is in an SOP example, or counted as truncated or dropped."""
    docs, _ = synthetic_documents(seed=3)
    docs[0].insert(1, np.arange(100_000, 100_300))  # one sentence of 300 tokens
    builder = PairBuilder(64, "sop", CLS, SEP, PAD, short_seq_prob=0.0, seed=0)
    examples = list(builder.examples(docs))
    kept = sum(len(a) + len(b) for a, b in map(segments, examples))
    counts = builder.statistics
    assert kept + counts["tokens_truncated"] + counts["tokens_dropped"] == sum(
        len(s) for doc in docs for s in doc)
    assert counts["tokens_truncated"] >= 300 - 61  # the long sentence's pair at least
    assert 1 <= counts["pairs_truncated"] < len(examples)
    assert counts["sentences_split"] == 0


def test_the_builder_reports_what_it_left_out(caplog):
    builder = PairBuilder(16, "nsp", CLS, SEP, PAD, short_seq_prob=0.0, seed=0)
    with caplog.at_level("INFO"):
        list(builder.examples([[np.arange(10, 60)], [np.arange(60, 70)]]))
    assert builder.statistics["tokens_truncated"] > 0
    assert (f"{builder.statistics['pairs_truncated']} pairs longer than 13 tokens were "
            f"truncated ({builder.statistics['tokens_truncated']} tokens") in caplog.text


def test_the_builder_reports_also_when_its_consumer_stops_early(caplog):
    """tf.data's take(n) closes the generator: what was truncated so far is still logged."""
    builder = PairBuilder(16, "nsp", CLS, SEP, PAD, short_seq_prob=0.0, seed=0)
    documents = [[np.arange(10, 60)], [np.arange(60, 70)]] * 20
    with caplog.at_level("INFO"):
        examples = builder.examples(documents)
        next(examples)
        assert "were truncated" not in caplog.text
        examples.close()
    assert builder.statistics["tokens_truncated"] > 0
    assert f"{builder.statistics['pairs_truncated']} pairs longer than 13 tokens" in caplog.text
