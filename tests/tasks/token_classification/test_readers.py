"""Token classification's readers: CoNLL column files and TFDS's conll2003."""

import numpy as np
import pytest
import tensorflow_datasets as tfds

from kbert.tasks.token_classification.data import read_conll, read_tfds
from tests.tasks.text_classification.test_readers import _mocked, error_naming, write


# --- CoNLL ------------------------------------------------------------------------------

CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER
"""


def test_read_conll(tmp_path):
    path = write(tmp_path / "train.txt", CONLL)
    data = read_conll(path)
    assert data.label_names == ["B-MISC", "B-ORG", "B-PER", "I-PER", "O"]
    assert [e.words for e in data.examples] == [("EU", "rejects", "German"),
                                               ("Peter", "Blackburn")]
    assert [e.tags for e in data.examples] == [(1, 4, 0), (2, 3)]
    assert data.examples[1].origin == f"{path}: line 7"
    pos = read_conll(path, tag_column=1)
    assert pos.label_names == ["JJ", "NNP", "VBZ"]
    words_only = read_conll(path, tag_column=None)
    assert words_only.examples[0].tags is None


def test_conll_errors_name_file_and_line(tmp_path):
    path = write(tmp_path / "bad.txt", CONLL.replace("Blackburn NNP I-NP I-PER",
                                                     "Blackburn I-PER"))
    with error_naming(path, "line 8", "2 columns", "expected 4", "line 3"):
        read_conll(path)
    path = write(tmp_path / "dev.txt", CONLL.replace("I-PER", "I-PERSON"))
    with error_naming(path, "line 8", "unknown label 'I-PERSON'"):
        read_conll(path, label_names=["B-MISC", "B-ORG", "B-PER", "I-PER", "O"])
    with error_naming(path, "line 3", "no column 7"):
        read_conll(path, tag_column=7)
    with error_naming("no sentences"):
        read_conll(write(tmp_path / "empty.txt", "-DOCSTART- O\n\n"))


# --- TFDS -------------------------------------------------------------------------------

def test_tfds_conll2003():
    rows = [{"tokens": ["EU", "rejects", "German"], "ner": np.array([3, 0, 7], np.int64),
             "pos": np.array([22, 42, 16], np.int64), "chunks": np.array([11, 21, 11], np.int64)}]
    with _mocked(rows):
        data = read_tfds("conll2003", split="dev")
    assert data.label_names[:4] == ["O", "B-PER", "I-PER", "B-ORG"]
    assert [(e.words, e.tags) for e in data.examples] == [(("EU", "rejects", "German"),
                                                          (3, 0, 7))]
    # Random mock data has as many tags as words only by chance: the mismatch is named.
    with tfds.testing.mock_data(num_examples=3), error_naming("conll2003 (train) example 0",
                                                              "words but", "tags"):
        read_tfds("conll2003")


def test_tfds_names_of_other_tasks():
    # Each task folder reads its own TFDS datasets; conll2003 is read here.
    with pytest.raises(ValueError, match=r"'glue/sst2' is no TFDS tagging dataset.*conll2003"):
        read_tfds("glue/sst2")
