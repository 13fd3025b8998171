import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kbert.data import corpora, pretraining_dataset, tfrecords
from tests.helpers import as_dataset
from tests.tools.one_process import run_commands

ROOT = Path(__file__).resolve().parents[2]


def first_batches(dataset, n):
    out = []
    for batch in dataset.take(n).as_numpy_iterator():
        out.append(batch)
    return out


def assert_same(a, b):
    for (fa, la), (fb, lb) in zip(a, b):
        for key in fa:
            np.testing.assert_array_equal(fa[key], fb[key])
        for key in la:
            np.testing.assert_array_equal(la[key], lb[key])


def test_documents_tokenized_in_groups_as_one_by_one(tokenizer):
    """Groups of documents (empty ones, a group of empty ones, an empty sentence, a short
    last group, groups of alike documents, which tf.data batches densely, and documents of
    unknown rank) give every document's sentences as tokenizing each sentence alone does."""
    import tensorflow as tf

    from kbert.data.pretraining_examples import _split_documents, tokenized_documents

    ragged = [["The first one.", "Two sentences."], ["Alone here."], [], [],
              ["A b c.", "", "d e f."], ["g h i.", "Last, and longer than the rest."], []]
    alike = [["a b.", "c."]] * 3
    unknown_rank = tf.data.Dataset.from_generator(lambda: iter(ragged),
                                                  output_types=tf.string)
    for documents, dataset in ((ragged, as_dataset(ragged)),
                               (alike, tf.data.Dataset.from_tensor_slices(alike)),
                               (ragged, unknown_rank)):
        got = [document for group in tokenized_documents(dataset, tokenizer, group=2)
               .as_numpy_iterator() for document in _split_documents(*group)]
        assert [len(d) for d in got] == [len(d) for d in documents]
        for ours, sentences in zip(got, documents):
            for ids, sentence in zip(ours, sentences):
                np.testing.assert_array_equal(ids, tokenizer.tokenize(tf.constant([sentence]))[0])


@pytest.mark.slow
def test_static_shapes_and_names(stdlib_documents, tokenizer):
    data = pretraining_dataset(as_dataset(stdlib_documents[:30]), tokenizer, sequence_length=64,
                               max_predictions=10, batch_size=8)
    features, labels = data.element_spec
    assert {k: tuple(v.shape) for k, v in features.items()} == {
        "token_ids": (8, 64), "segment_ids": (8, 64), "padding_mask": (8, 64),
        "mask_positions": (8, 10),
    }
    assert {k: tuple(v.shape) for k, v in labels.items()} == {
        "mask_ids": (8, 10), "mask_weights": (8, 10), "next_sentence_labels": (8,),
    }
    mlm_only = pretraining_dataset(as_dataset(stdlib_documents[:5]), tokenizer, sentence_task="none",
                                   batch_size=4)
    assert set(mlm_only.element_spec[1]) == {"mask_ids", "mask_weights"}


@pytest.mark.slow
def test_same_seed_same_batches_and_new_masks_each_epoch(stdlib_documents, tokenizer):
    docs = stdlib_documents[:40]

    def make(seed):
        return pretraining_dataset(as_dataset(docs), tokenizer, batch_size=16, seed=seed,
                                   shuffle_buffer=0)

    data = make(11)
    epoch_1 = first_batches(data, 3)
    assert_same(epoch_1, first_batches(make(11), 3))  # same seed, new pipeline: identical
    epoch_2 = first_batches(data, 3)  # a second pass over the same dataset
    from tests.data.test_masking import original_ids

    for (f1, l1), (f2, l2) in zip(epoch_1, epoch_2):
        np.testing.assert_array_equal(original_ids(f1, l1), original_ids(f2, l2))
    positions_1 = np.concatenate([f["mask_positions"] for f, _ in epoch_1])
    positions_2 = np.concatenate([f["mask_positions"] for f, _ in epoch_2])
    assert (positions_1 != positions_2).mean() > 0.5  # fresh masks on the same sequences
    other = first_batches(make(12), 3)
    assert not np.array_equal(other[0][0]["mask_positions"], epoch_1[0][0]["mask_positions"])


@pytest.mark.slow
def test_tfrecords_round_trip(stdlib_documents, tokenizer, tmp_path):
    def make():  # the same seed: the same batches (a second pass would draw new masks)
        return pretraining_dataset(as_dataset(stdlib_documents[:20]), tokenizer,
                                   sequence_length=64, max_predictions=10, batch_size=8, seed=2)

    batches = first_batches(make(), 3)
    files, count = tfrecords.write(make().take(3), str(tmp_path / "records" / "train.tfrecord"),
                                   num_shards=1)
    assert count == 24 and len(files) == 1
    back = first_batches(tfrecords.read(files, 64, 10, batch_size=8, shuffle_files=False), 3)
    assert_same(batches, back)
    for features, labels in back:
        assert features["token_ids"].dtype == np.int32 and labels["mask_weights"].dtype == np.float32
    with pytest.raises(FileNotFoundError, match="No input file matches"):
        tfrecords.read(str(tmp_path / "none*.tfrecord"), 64, 10, batch_size=8)


def test_reads_original_feature_names(tmp_path):
    """A record made with the original feature names, as create_pretraining_data.py writes."""
    import tensorflow as tf

    def ints(v):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=v))

    example = tf.train.Example(features=tf.train.Features(feature={
        "input_ids": ints([2, 7, 4, 3, 0, 0]), "input_mask": ints([1, 1, 1, 1, 0, 0]),
        "segment_ids": ints([0, 0, 0, 0, 0, 0]), "masked_lm_positions": ints([2, 0]),
        "masked_lm_ids": ints([9, 0]),
        "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0, 0.0])),
        "next_sentence_labels": ints([1]),
    }))
    path = str(tmp_path / "orig.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        w.write(example.SerializeToString())
    features, labels = next(iter(tfrecords.read(path, 6, 2, batch_size=1)))
    assert features["token_ids"].numpy().tolist() == [[2, 7, 4, 3, 0, 0]]
    assert features["padding_mask"].numpy().tolist() == [[1, 1, 1, 1, 0, 0]]
    assert features["mask_positions"].numpy().tolist() == [[2, 0]]
    assert labels["mask_ids"].numpy().tolist() == [[9, 0]]
    assert labels["mask_weights"].numpy().tolist() == [[1.0, 0.0]]
    assert labels["next_sentence_labels"].numpy().tolist() == [1]


@pytest.mark.slow
def test_bad_input_never_breaks_the_pipeline(tokenizer, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "empty.txt").write_text("")
    (folder / "blank.txt").write_text("\n\n   \n\t\n")
    (folder / "one_sentence_docs.txt").write_text("Only one.\n\nAnother single.\n\nx\n")
    (folder / "bytes.txt").write_bytes(b"Bad \xff\xfe\xfd bytes here.\nControl \x00\x01\x1b[31m chars.\n")
    (folder / "huge_line.txt").write_text("word " * 200_000 + "\nnext line.\n")  # 1 MB line
    (folder / "long_doc.txt").write_text("\n".join(f"Sentence {i} of a long document." for i in range(20_000)))
    documents = corpora.text_files(str(folder / "*.txt"))
    data = pretraining_dataset(documents, tokenizer, sequence_length=64, max_predictions=8,
                               batch_size=16, seed=0)
    count = 0
    for features, labels in data.as_numpy_iterator():
        count += 1
        assert features["token_ids"].shape == (16, 64)
        for array in (features["token_ids"], labels["mask_ids"]):
            assert array.min() >= 0 and array.max() < tokenizer.vocabulary_size
        assert features["mask_positions"].max() < 64
    assert count > 100


@pytest.mark.slow
def test_distributed_dataset_under_mirrored_strategy(tmp_path):
    script = textwrap.dedent(
        """
        import tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        from kbert.data import corpora, pretraining_dataset
        from kbert.tokenizers import WordPieceTokenizer
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "."]
        tokenizer = WordPieceTokenizer(vocab)
        docs = tf.data.Dataset.from_tensor_slices([["a b c .", "b c a .", "c a b ."]] * 20)
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        data = pretraining_dataset(docs, tokenizer, sequence_length=16, max_predictions=4,
                                   batch_size=8)
        dist = strategy.experimental_distribute_dataset(data)
        features, labels = next(iter(dist))
        shapes = [t.shape.as_list() for t in strategy.experimental_local_results(features["token_ids"])]
        assert shapes == [[4, 16], [4, 16]], shapes
        print("MIRRORED_OK")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert "MIRRORED_OK" in result.stdout, result.stderr[-3000:]


@pytest.mark.slow
def test_create_pretraining_data_tool(tokenizer, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(tokenizer.vocabulary) + "\n")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(
        "\n".join(f"Return the value {i} of the attribute {j}." for j in range(6)) for i in range(40)
    ))
    out = tmp_path / "out" / "train.tfrecord"
    flags = [f"--input={corpus}", f"--vocab={vocab}", f"--output={out}",
             "--sequence_length=32", "--max_predictions=5", "--num_shards=2"]
    # The three commands in one process (tests/tools/one_process.py: each as `python
    # tools/create_pretraining_data.py FLAGS` runs, TensorFlow imported once).
    one, two, bad = run_commands(ROOT / "tools" / "create_pretraining_data.py", [
        flags + ["--dupe_factor=1"], flags + ["--dupe_factor=2"],
        ["--input=/nowhere/*.txt", f"--vocab={vocab}", f"--output={out}"]], timeout=300)
    assert one.returncode == 0, one.stderr[-3000:]
    assert two.returncode == 0, two.stderr[-3000:]
    counts = [int(r.stdout.split("Wrote ")[1].split()[0]) for r in (one, two)]
    assert counts[0] > 20 and counts[1] == 2 * counts[0]
    files = sorted(str(p) for p in (tmp_path / "out").iterdir())
    assert len(files) == 2
    read_back = sum(int(f["token_ids"].shape[0]) for f, _ in
                    tfrecords.read(files, 32, 5, batch_size=4, drop_remainder=False))
    assert read_back == counts[1]
    assert bad.returncode != 0 and "No input file matches '/nowhere/*.txt'" in bad.stderr
