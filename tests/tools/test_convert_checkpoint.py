"""tools/convert_checkpoint.py: every --to from a TF1 release, errors as usage errors."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kbert.convert
from kbert.untrusted import load_model
from kbert.tokenizers import WordPieceTokenizer
from tests.convert import _checkpoints

ROOT = Path(__file__).resolve().parents[2]
TOOL = str(ROOT / "tools" / "convert_checkpoint.py")
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")


def _run(*flags):
    return subprocess.run([sys.executable, TOOL, *flags], capture_output=True, text=True,
                          env=ENV, timeout=300)


@pytest.mark.slow
def test_tf1_to_kbert_and_hf(tmp_path):
    original = _checkpoints.random_pretrainer(seed=9)
    release = _checkpoints.write_tf1_release(original, tmp_path / "release")
    result = _run("--from=tf1", "--to=kbert", f"--input={release}", f"--output={tmp_path / 'k'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "heads: pretrainer" in result.stdout
    model = load_model(str(tmp_path / "k" / "model.keras"))
    _checkpoints.assert_same_outputs(original, model, _checkpoints.inputs())
    tokenizer = WordPieceTokenizer(str(tmp_path / "k" / "vocab.txt"))
    assert tokenizer.vocabulary == _checkpoints.VOCABULARY
    # kbert -> hf (format detected), then hf -> kbert backbone only.
    result = _run("--to=hf", f"--input={tmp_path / 'k'}", f"--output={tmp_path / 'hf'}")
    assert result.returncode == 0, result.stderr[-3000:]
    result = _run("--from=hf", "--to=kbert", "--head=none", f"--input={tmp_path / 'hf'}",
                  f"--output={tmp_path / 'k2'}")
    assert result.returncode == 0, result.stderr[-3000:]
    backbone = kbert.convert.load(tmp_path / "k2")
    _checkpoints.assert_same_outputs(original.backbone, backbone, _checkpoints.inputs())
    hf = kbert.convert.read(tmp_path / "hf")
    for name, value in kbert.convert.read(release).weights.items():
        assert np.array_equal(hf.weights[name], value), name


@pytest.mark.slow
def test_bad_flags_are_usage_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    result = _run("--to=hf", f"--input={tmp_path / 'empty'}", f"--output={tmp_path / 'out'}")
    assert result.returncode != 0 and "--input:" in result.stderr
    assert "not a checkpoint kbert can read" in result.stderr and "Traceback" not in result.stderr
    result = _run("--to=onnx", f"--input={tmp_path}", f"--output={tmp_path / 'out'}")
    assert result.returncode != 0 and "--to=onnx: value should be one of <kbert|hf>" in result.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    result = _run("--to=hf", f"--input={tmp_path}", f"--output={tmp_path / 'full'}")
    assert result.returncode != 0 and "exists and is not empty" in result.stderr
    result = _run("--to=hf", "--head=mlm", f"--input={tmp_path}", f"--output={tmp_path / 'o'}")
    assert result.returncode != 0 and "--head applies to --to=kbert" in result.stderr


@pytest.mark.slow
def test_an_electra_pretrainer_to_hf_and_back(tmp_path):
    """The Hugging Face ELECTRA fixture (discriminator + generator/) -> hf -> kbert."""
    from tests.convert import _families

    result = _run("--to=hf", f"--input={_families.FIXTURES / 'electra'}",
                  f"--output={tmp_path / 'hf'}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "(hf: electra, 2 layers, hidden 16, heads: pretrainer)" in result.stdout
    assert (tmp_path / "hf" / "generator" / "model.safetensors").is_file()
    result = _run("--to=kbert", f"--input={tmp_path / 'hf'}", f"--output={tmp_path / 'k'}")
    assert result.returncode == 0, result.stderr[-3000:]
    _families.check_against_transformers(load_model(str(tmp_path / "k" / "model.keras")),
                                         "electra")
