"""tools/convert_checkpoint.py: every --to from a TF1 release, errors as usage errors."""

import os
from pathlib import Path

import numpy as np
import pytest

import kbert.convert
from kbert.untrusted import load_model
from kbert.tokenizers import WordPieceTokenizer
from tests.convert import _checkpoints
from tests.tools.one_process import run_commands

ROOT = Path(__file__).resolve().parents[2]
TOOL = str(ROOT / "tools" / "convert_checkpoint.py")
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """Every command the tests below check, in ONE process (tests/tools/one_process.py: each
    as `python tools/convert_checkpoint.py FLAGS` runs it, TensorFlow imported once, not ~5 s
    per command): (folder, the TF1 release's model, the release, {test: [CompletedProcess of
    each of its commands]})."""
    from tests.convert import _families

    tmp = tmp_path_factory.mktemp("convert")
    original = _checkpoints.random_pretrainer(seed=9)
    release = _checkpoints.write_tf1_release(original, tmp / "release")
    usage = tmp / "usage"
    (usage / "empty").mkdir(parents=True)
    (usage / "full").mkdir()
    (usage / "full" / "x").write_text("x")
    commands = {
        # tf1 -> kbert; kbert -> hf (format detected), then hf -> kbert backbone only.
        "tf1": [["--from=tf1", "--to=kbert", f"--input={release}", f"--output={tmp / 'k'}"],
                ["--to=hf", f"--input={tmp / 'k'}", f"--output={tmp / 'hf'}"],
                ["--from=hf", "--to=kbert", "--head=none", f"--input={tmp / 'hf'}",
                 f"--output={tmp / 'k2'}"]],
        "usage": [["--to=hf", f"--input={usage / 'empty'}", f"--output={usage / 'out'}"],
                  ["--to=onnx", f"--input={usage}", f"--output={usage / 'out'}"],
                  ["--to=hf", f"--input={usage}", f"--output={usage / 'full'}"],
                  ["--to=hf", "--head=mlm", f"--input={usage}", f"--output={usage / 'o'}"]],
        # The Hugging Face ELECTRA fixture (discriminator + generator/) -> hf -> kbert.
        "electra": [["--to=hf", f"--input={_families.FIXTURES / 'electra'}",
                     f"--output={tmp / 'electra_hf'}"],
                    ["--to=kbert", f"--input={tmp / 'electra_hf'}",
                     f"--output={tmp / 'electra_k'}"]],
    }
    done = iter(run_commands(TOOL, [c for cs in commands.values() for c in cs], env=ENV,
                             timeout=600))
    return tmp, original, release, {name: [next(done) for _ in cs]
                                    for name, cs in commands.items()}


@pytest.mark.slow
def test_tf1_to_kbert_and_hf(converted):
    tmp_path, original, release, results = converted
    results = results["tf1"]
    for result in results:
        assert result.returncode == 0, result.stderr[-3000:]
    assert "heads: pretrainer" in results[0].stdout
    model = load_model(str(tmp_path / "k" / "model.keras"))
    _checkpoints.assert_same_outputs(original, model, _checkpoints.inputs())
    tokenizer = WordPieceTokenizer(str(tmp_path / "k" / "vocab.txt"))
    assert tokenizer.vocabulary == _checkpoints.VOCABULARY
    backbone = kbert.convert.load(tmp_path / "k2")
    _checkpoints.assert_same_outputs(original.backbone, backbone, _checkpoints.inputs())
    hf = kbert.convert.read(tmp_path / "hf")
    for name, value in kbert.convert.read(release).weights.items():
        assert np.array_equal(hf.weights[name], value), name


@pytest.mark.slow
def test_bad_flags_are_usage_errors(converted):
    empty, onnx, full, head = converted[3]["usage"]
    assert empty.returncode != 0 and "--input:" in empty.stderr
    assert "not a checkpoint kbert can read" in empty.stderr and "Traceback" not in empty.stderr
    assert onnx.returncode != 0 and "--to=onnx: value should be one of <kbert|hf>" in onnx.stderr
    assert full.returncode != 0 and "exists and is not empty" in full.stderr
    assert head.returncode != 0 and "--head applies to --to=kbert" in head.stderr


@pytest.mark.slow
def test_an_electra_pretrainer_to_hf_and_back(converted):
    """The Hugging Face ELECTRA fixture (discriminator + generator/) -> hf -> kbert."""
    from tests.convert import _families

    tmp_path, _, _, results = converted
    to_hf, back = results["electra"]
    assert to_hf.returncode == 0, to_hf.stderr[-3000:]
    assert "(hf: electra, 2 layers, hidden 16, heads: pretrainer)" in to_hf.stdout
    assert (tmp_path / "electra_hf" / "generator" / "model.safetensors").is_file()
    assert back.returncode == 0, back.stderr[-3000:]
    _families.check_against_transformers(
        load_model(str(tmp_path / "electra_k" / "model.keras")), "electra")
