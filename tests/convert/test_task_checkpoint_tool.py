"""kbert-convert (kbert/programs/convert_checkpoint.py) on fine-tuned checkpoints, through its
main in this process: Hugging Face -> kbert task model -> Hugging Face, and the encoder
alone."""

import importlib
import json

import pytest
from absl import app, flags

from kbert import tasks
from kbert.untrusted import load_model
from tests.convert import _tasks


@pytest.fixture(scope="module")
def tool():
    # Imported once: the module defines its flags on absl's global FLAGS.
    return importlib.import_module("kbert.programs.convert_checkpoint")


def _run(tool, *args):
    flags.FLAGS.unparse_flags()
    flags.FLAGS(["convert_checkpoint.py", *args])
    try:
        tool.main([])
    finally:
        flags.FLAGS.unparse_flags()


def test_a_fine_tuned_checkpoint_to_kbert_and_back(tool, tmp_path, capsys):
    source = _tasks.FIXTURES / "distil_bert_seq_single"
    _run(tool, "--to=kbert", f"--input={source}", f"--output={tmp_path / 'k'}")
    assert ("(hf: distil_bert, 2 layers, hidden 24, task: text_classifier "
            "(DistilBertForSequenceClassification, labels NEGATIVE, NEUTRAL, POSITIVE))"
            in capsys.readouterr().out)
    model = load_model(str(tmp_path / "k" / "model.keras"))
    assert isinstance(model, tasks.TextClassifier) and model.label_names == _tasks.SEQ_LABELS
    assert _tasks.largest_difference(model, _tasks.reference(source.name)) < _tasks.ATOL

    _run(tool, "--to=hf", f"--input={tmp_path / 'k'}", f"--output={tmp_path / 'hf'}")
    assert "(kbert: distil_bert" in capsys.readouterr().out
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == ["DistilBertForSequenceClassification"]
    assert config["id2label"] == {"0": "NEGATIVE", "1": "NEUTRAL", "2": "POSITIVE"}
    assert "problem_type" not in config  # the source states none: transformers infers it
    assert (tmp_path / "hf" / "vocab.txt").read_text() == (source / "vocab.txt").read_text()


def test_head_none_saves_the_encoder_and_bad_heads_are_usage_errors(tool, tmp_path, capsys):
    source = _tasks.FIXTURES / "albert_token"
    _run(tool, "--to=kbert", "--head=none", f"--input={source}", f"--output={tmp_path / 'k'}")
    assert "heads: none)" in capsys.readouterr().out
    assert type(load_model(str(tmp_path / "k" / "model.keras"))).__name__ == "AlbertBackbone"
    with pytest.raises(app.UsageError, match="--to=kbert: .* lacks .* tensors the model needs"):
        _run(tool, "--to=kbert", "--head=mlm", f"--input={source}",
             f"--output={tmp_path / 'k2'}")
