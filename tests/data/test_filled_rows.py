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


def test_document_ids_follow_the_cls_and_sep_of_each_row():
    """Each row numbers its documents 1, 2, ... from its first token: a new id at every [CLS]
    (and at the row's start, where a document runs on from the row before), the same id up
    to that document's [SEP], 0 on padding."""
    builder = PairBuilder(16, "none", CLS, SEP, PAD, pack_across_documents=True,
                          fill_rows=True)
    rows = list(builder.examples(documents()))
    for row in rows:
        tokens, ids, real = row["token_ids"], row["document_ids"], row["padding_mask"] > 0
        assert (ids[~real] == 0).all() and (ids[real] > 0).all()
        starts = np.flatnonzero(real & ((tokens == CLS) | (np.arange(16) == 0)))
        expected = np.zeros(16, np.int32)
        expected[starts] = 1
        np.testing.assert_array_equal(ids, np.cumsum(expected) * real)
        ends = np.flatnonzero(tokens == SEP)
        assert all(i + 1 == len(ids) or not real[i + 1] or ids[i + 1] == ids[i] + 1
                   for i in ends)
    # The stream's documents, counted over the rows: one per [CLS], plus each run-on piece.
    pieces = sum(int(r["document_ids"].max()) for r in rows)
    run_ons = sum(r["token_ids"][0] != CLS for r in rows)
    assert pieces == len(documents()) + run_ons and run_ons > 0


def test_the_pretraining_batches_carry_the_document_ids():
    """With fill_rows and document_ids the features add `document_ids` (each row numbers its
    own pieces: the second row starts with the run-on of the second document), untouched by
    masking; without document_ids=True they are not in the batches (a model without that
    input would be fed wrongly by Keras), and document_ids alone is refused."""
    import tensorflow as tf

    from kbert.data import pretraining_dataset
    from kbert.tokenizers import WordPieceTokenizer

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d"]
    tokenizer = WordPieceTokenizer(vocabulary, lowercase=True)
    corpus = tf.data.Dataset.from_tensor_slices(
        tf.ragged.constant([["a b c", "d a"], ["b b"], ["c d a b c d a"]]))
    (features, labels), = pretraining_dataset(
        corpus, tokenizer, sequence_length=8, max_predictions=2, batch_size=3,
        sentence_task="none", short_seq_prob=0.0, shuffle_buffer=0, drop_remainder=False,
        pack_across_documents=True, fill_rows=True, document_ids=True).as_numpy_iterator()
    np.testing.assert_array_equal(features["document_ids"], [[1, 1, 1, 1, 1, 1, 1, 2],
                                                             [1, 1, 1, 2, 2, 2, 2, 2],
                                                             [1, 1, 1, 1, 0, 0, 0, 0]])
    (plain, _), = pretraining_dataset(
        corpus, tokenizer, sequence_length=8, max_predictions=2, batch_size=3,
        sentence_task="none", short_seq_prob=0.0, shuffle_buffer=0, drop_remainder=False,
        pack_across_documents=True, fill_rows=True).as_numpy_iterator()
    assert sorted(plain) == ["mask_positions", "padding_mask", "segment_ids", "token_ids"]
    np.testing.assert_array_equal(plain["token_ids"] > 0, features["token_ids"] > 0)
    with pytest.raises(ValueError, match="document_ids=True .* needs fill_rows=True"):
        pretraining_dataset(corpus, tokenizer, sequence_length=8, sentence_task="none",
                            pack_across_documents=True, document_ids=True)


def test_filled_rows_write_to_tfrecords_that_read_back(tmp_path):
    """`tfrecords.write` takes `fill_rows` data: its `document_ids` keep their kbert name in
    the file (BERT's readers ignore a feature they do not ask for), and the rest reads back."""
    import tensorflow as tf

    from kbert.data import pretraining_dataset, tfrecords
    from kbert.tokenizers import WordPieceTokenizer

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d"]
    tokenizer = WordPieceTokenizer(vocabulary, lowercase=True)
    corpus = tf.data.Dataset.from_tensor_slices(
        tf.ragged.constant([["a b c", "d a"], ["b b"], ["c d a b c d a"]]))
    data = pretraining_dataset(
        corpus, tokenizer, sequence_length=8, max_predictions=2, batch_size=3,
        sentence_task="none", short_seq_prob=0.0, shuffle_buffer=0, drop_remainder=False,
        pack_across_documents=True, fill_rows=True, document_ids=True)
    (features, labels), = data.as_numpy_iterator()
    path = str(tmp_path / "rows.tfrecord")
    files, count = tfrecords.write(data, path)
    assert (files, count) == ([path], 3)
    [record] = list(tf.data.TFRecordDataset(path).take(1).as_numpy_iterator())
    stored = tf.train.Example.FromString(record).features.feature
    assert list(stored["document_ids"].int64_list.value) == features["document_ids"][0].tolist()
    # (A second pass over the dataset draws new masks: the masked tokens differ, not the rows.)
    assert list(stored["input_mask"].int64_list.value) == features["padding_mask"][0].tolist()
    (read, _), = tfrecords.read(path, 8, 2, batch_size=3, next_sentence_labels=False,
                                 ).as_numpy_iterator()
    assert sorted(map(tuple, read["padding_mask"])) == sorted(map(tuple,
                                                                  features["padding_mask"]))


def test_the_tool_passes_document_ids_only_with_separate_documents(tmp_path):
    """tools/pretrain.py's batches (`pretraining_inputs.dataset`): --fill_rows alone gives
    no `document_ids` (the model has no such input), --separate_documents adds them."""
    from kbert.tokenizers import WordPieceTokenizer
    from kbert.training import pretraining_inputs
    from kbert.training.pretraining_config import PretrainingConfig

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b c. d a.\n\nb b.\n\nc d a b c d a.\n")
    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b",
                                    "c", "d", "."], lowercase=True)
    keys = {}
    for separate in (False, True):
        config = PretrainingConfig(
            model_dir=str(tmp_path / "run"), input=str(corpus), preset="modern_bert_base",
            tokenizer_type="wordpiece", objective="mlm", sequence_length=8,
            max_predictions=2, global_batch_size=2, pack_across_documents=True,
            fill_rows=True, separate_documents=separate)
        config.validate()  # a run the tool accepts
        features, _ = pretraining_inputs.dataset(config, tokenizer, repeat=False).element_spec
        keys[separate] = sorted(features)
    assert keys[False] == ["mask_positions", "padding_mask", "segment_ids", "token_ids"]
    assert keys[True] == sorted(keys[False] + ["document_ids"])


def test_the_tools_shuffle_buffer_orders_the_rows(tmp_path):
    """--shuffle_buffer=0: the rows come in the corpus's order (each document's first row
    starts with its first word); a buffer that holds every row gives another order of the
    same rows."""
    from kbert.tokenizers import WordPieceTokenizer
    from kbert.training import pretraining_inputs
    from kbert.training.pretraining_config import PretrainingConfig

    words = ["a", "b", "c", "d", "e", "f", "g", "h"]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(f"{w} {w} {w}." for w in words) + "\n")
    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *words],
                                   lowercase=True)
    firsts = {}
    for buffer in (0, 100):
        config = PretrainingConfig(
            model_dir=str(tmp_path / "run"), input=str(corpus), objective="mlm",
            sequence_length=8, max_predictions=1, masked_lm_prob=0.01, global_batch_size=1,
            pack_across_documents=True, fill_rows=True, shuffle_buffer=buffer, seed=3)
        config.validate()
        rows = [f["token_ids"][0] for f, _ in pretraining_inputs.dataset(
            config, tokenizer, repeat=False).as_numpy_iterator()]
        # The first id after each row's [CLS] that is a word (masks aside): whose row it is.
        firsts[buffer] = [next(int(i) for i in row[1:] if i >= 6) for row in rows]
    assert firsts[0] == sorted(firsts[0])  # the corpus's order
    assert sorted(firsts[100]) == firsts[0] and firsts[100] != firsts[0]
