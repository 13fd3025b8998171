import gzip

import pytest
import tensorflow_datasets as tfds

from kbert.data import corpora, inputs


def read(dataset):
    return [[s.decode() for s in doc] for doc in dataset.as_numpy_iterator()]


def test_bert_format_text_files(tmp_path):
    (tmp_path / "a.txt").write_text("First doc one.\nFirst doc two.\n\n   \n\nSecond doc.\n")
    with gzip.open(tmp_path / "b.txt.gz", "wt") as f:
        f.write("Zipped doc.\nStill zipped.\n")
    (tmp_path / "empty.txt").write_text("")
    docs = read(corpora.text_files(str(tmp_path / "*")))
    assert docs == [
        ["First doc one.", "First doc two."],
        ["Second doc."],
        ["Zipped doc.", "Still zipped."],
    ]


def test_bad_bytes_and_control_characters(tmp_path):
    (tmp_path / "bad.txt").write_bytes(b"ok \xff\xfe bytes\x00 and\x07 bells\r\n\x0b\n\ttabs\tinside\n")
    docs = read(corpora.text_files(str(tmp_path / "bad.txt")))
    assert docs == [["ok \ufffd\ufffd bytes and bells"], ["tabs inside"]]
    # Format characters are deleted, as BERT's tokenizer deletes them: one word stays one.
    assert corpora.clean_text("the\u200bstra\u00adße \ufeffand\ue000 more") == "thestraße and more"


def test_missing_inputs_fail_before_any_work(tmp_path):
    with pytest.raises(FileNotFoundError, match="No input file matches .*nothing-here"):
        corpora.text_files(str(tmp_path / "nothing-here*.txt"))
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        inputs.documents(f"{tmp_path}/missing.txt")
    with pytest.raises(ValueError, match="Empty input"):
        inputs.documents("")


def test_split_sentences():
    text = "One sentence. Another one! Is it 3? Yes.\n\nNew paragraph e.g. here."
    assert corpora.split_sentences(text) == [
        "One sentence.", "Another one!", "Is it 3?", "Yes.", "New paragraph e.g. here."
    ]


def test_tfds_documents():
    with tfds.testing.mock_data(num_examples=7):
        docs = read(inputs.documents("tfds:imdb_reviews:train"))
    assert len(docs) == 7 and all(doc and all(s.strip() for s in doc) for doc in docs)
    with tfds.testing.mock_data(num_examples=2):
        with pytest.raises(ValueError, match="no feature 'body'"):
            corpora.tfds_documents("imdb_reviews", text_key="body")


@pytest.mark.slow
def test_stdlib_docstrings(stdlib_documents):
    assert len(stdlib_documents) > 200
    sentences = sum(len(doc) for doc in stdlib_documents)
    words = sum(len(s.split()) for doc in stdlib_documents for s in doc)
    assert sentences > 10_000 and words > 100_000
    assert all(len(doc) >= 2 and all(s.strip() for s in doc) for doc in stdlib_documents)
