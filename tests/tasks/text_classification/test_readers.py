"""Fine-tuning data readers of text classification: local files (CSV/TSV/JSONL) and TFDS
(GLUE); and the helpers the other folders' reader tests use (CoNLL:
tests/tasks/token_classification/test_readers.py, SQuAD: tests/tasks/question_answering/)."""

import re

import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from kbert.tasks.datasets import DataError
from kbert.tasks.question_answering.data import TFDS_TASKS as SQUAD_TASKS
from kbert.tasks.text_classification.data import TFDS_TASKS as GLUE_TASKS
from kbert.tasks.token_classification.data import TFDS_TASKS as TAGGING_TASKS
from kbert.tasks.text_classification.data import read_classification_file, read_tfds


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def error_naming(*parts):
    return pytest.raises(DataError, match=".*".join(re.escape(str(p)) for p in parts))


# --- classification files ---------------------------------------------------------------

def test_glue_style_tsv_pairs(tmp_path):
    # MRPC's layout: a header, unbalanced quotes left as they are.
    path = write(tmp_path / "train.tsv",
                 "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                 "1\t1\t2\tHe said \"yes.\tHe agreed.\n"
                 "0\t3\t4\tA cat.\tA dog.\n")
    data = read_classification_file(path, "#1 String", "#2 String", "Quality")
    assert data.label_names == ["0", "1"] and not data.regression
    assert [(e.text_a, e.text_b, e.label) for e in data.examples] == [
        ('He said "yes.', "He agreed.", 1), ("A cat.", "A dog.", 0)]
    assert data.examples[1].origin == f"{path}: line 3"


def test_csv_without_header_and_label_order(tmp_path):
    path = write(tmp_path / "cola.csv", 'gj04,1,,"Hello, world"\ngj04,0,*,Bad sentence\n\n')
    data = read_classification_file(path, 3, label_column=1, header=False)
    assert [e.text_a for e in data.examples] == ["Hello, world", "Bad sentence"]
    assert [e.label for e in data.examples] == [1, 0]
    # Labels sort numerically when all are integers, and a given order is kept.
    path = write(tmp_path / "many.csv", "text,label\na,10\nb,2\nc,1\n")
    assert read_classification_file(path, "text", label_column="label").label_names == [
        "1", "2", "10"]
    data = read_classification_file(path, "text", label_column="label",
                                    label_names=["10", "2", "1"])
    assert [e.label for e in data.examples] == [0, 1, 2]


def test_jsonl_regression_and_unlabelled(tmp_path):
    path = write(tmp_path / "stsb.jsonl",
                 '{"s1": "A man.", "s2": "A person.", "score": 3.8}\n\n'
                 '{"s1": "Dogs.", "s2": "Cats.", "score": "0"}\n')
    data = read_classification_file(path, "s1", "s2", "score")
    assert data.regression and data.label_names is None
    assert [e.label for e in data.examples] == [3.8, 0.0]
    data = read_classification_file(path, "s1", "s2")
    assert [e.label for e in data.examples] == [None, None]


def test_classification_file_errors_name_file_and_row(tmp_path):
    path = write(tmp_path / "train.tsv", "sentence\tlabel\ngood\tpos\n\tneg\n")
    with error_naming(path, "line 3", "empty text", "sentence"):
        read_classification_file(path, "sentence", label_column="label")
    path = write(tmp_path / "train.tsv", "sentence\tlabel\ngood\tpos\nbad\n")
    with error_naming(path, "line 3", "1 field;", "label column 'label' is missing"):
        read_classification_file(path, "sentence", label_column="label")
    with error_naming(path, "header", "'text'", "sentence"):
        read_classification_file(path, "text", label_column="label")
    path = write(tmp_path / "dev.tsv", "sentence\tlabel\ngood\tpos\nmeh\tneutral\n")
    with error_naming(path, "line 3", "unknown label 'neutral'", "['neg', 'pos']"):
        read_classification_file(path, "sentence", label_column="label",
                                 label_names=["neg", "pos"])
    path = write(tmp_path / "dev.jsonl", '{"text": "a", "label": 1}\n{"txt": "b", "label": 0}\n')
    with error_naming(path, "line 2", "'text'"):
        read_classification_file(path, "text", label_column="label")
    path = write(tmp_path / "dev.jsonl", '{"text": "a", "label": 1}\n{"text": "b", "label": 0\n')
    with error_naming(path, "line 2", "JSON"):
        read_classification_file(path, "text", label_column="label")
    path = write(tmp_path / "rows.csv", "x\n")
    with error_naming(path, "line 1", "2 is missing"):
        read_classification_file(path, 0, label_column=2, header=False)
    with pytest.raises(ValueError, match="extension"):
        read_classification_file(write(tmp_path / "data.xml", ""), "text")




# --- TFDS -------------------------------------------------------------------------------

@pytest.mark.parametrize("name, text_b, names", [
    ("glue/sst2", False, ["negative", "positive"]),
    ("glue/cola", False, ["unacceptable", "acceptable"]),
    ("glue/mrpc", True, ["not_equivalent", "equivalent"]),
    ("glue/mnli", True, ["entailment", "neutral", "contradiction"]),
])
def test_tfds_glue_classification(name, text_b, names):
    with tfds.testing.mock_data(num_examples=5):
        data = read_tfds(name, split="validation" if name == "glue/mnli" else "train")
    assert data.label_names == names and not data.regression
    assert len(data.examples) == 5
    for example in data.examples:
        assert isinstance(example.text_a, str) and example.text_a.strip()
        assert (example.text_b is not None) == text_b
        assert 0 <= example.label < len(names)
    if name == "glue/mnli":
        assert data.source == "glue/mnli (validation_matched)"


def test_tfds_stsb_is_regression():
    with tfds.testing.mock_data(num_examples=3):
        data = read_tfds("glue/stsb")
    assert data.regression and data.label_names is None
    assert all(isinstance(e.label, float) and e.text_b for e in data.examples)


def _mocked(rows):
    def as_dataset(self, *args, **kwargs):
        spec = self.info.features.get_tensor_spec()
        return tf.data.Dataset.from_generator(
            lambda: iter(rows), output_signature={k: spec[k] for k in rows[0]})
    return tfds.testing.mock_data(as_dataset_fn=as_dataset)


def test_tfds_unknown_name():
    with pytest.raises(ValueError, match="glue/sst2"):
        read_tfds("glue/qqp")
    assert set(SQUAD_TASKS) | set(GLUE_TASKS) | set(TAGGING_TASKS) >= {
        "glue/sst2", "glue/mrpc", "glue/mnli", "glue/stsb", "glue/cola", "squad/v1.1",
        "squad/v2.0", "conll2003"}
