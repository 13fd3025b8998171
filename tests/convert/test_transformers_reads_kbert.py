"""docs/checkpoints.md and docs/models.md: "transformers loads what kbert writes", with no
missing or unexpected weight and the same outputs.

tests/fixtures/make_transformers_reads_kbert.py had kbert write tiny random checkpoints of
every family it writes (pretrainers of the eight families; classifiers, taggers, readers and
sentence-transformers embedders of all eight), loaded them with transformers 4.57 and
sentence-transformers 5.7 in a Python with torch, and kept the verdict (verdict.json: the
class built, missing, unexpected and overridden weights, the tokenizer class, a digest of
every file read) and transformers' outputs (outputs.npz). Here kbert writes the same
checkpoints again: every file must be what transformers read (the same digests), and kbert's
outputs must equal transformers' within 1e-5. A change to what kbert writes fails here until
the fixture script is run again against transformers."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
_SPEC = importlib.util.spec_from_file_location(
    "make_transformers_reads_kbert", FIXTURES / "make_transformers_reads_kbert.py")
script = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(script)
VERDICT = json.loads((script.OUT / "verdict.json").read_text())
EXPECTED = dict(np.load(script.OUT / "outputs.npz"))
ATOL = 1e-5
# kbert's output -> transformers' (the first that the checkpoint's class gives)
SAME_OUTPUT = {"sequence_output": ("sequence_output",),
               "mlm_logits": ("prediction_logits", "logits"),
               "nsp_logits": ("seq_relationship_logits", "sop_logits"),
               "rtd_logits": ("logits",), "logits": ("logits",), "out": ("out", "logits"),
               "start_logits": ("start_logits",), "end_logits": ("end_logits",)}


def _transformers_key(name, key):
    if name == "electra" and key == "mlm_logits":  # the generator, in generator/
        return "electra/generator/logits"
    for theirs in SAME_OUTPUT[key]:
        if f"{name}/{theirs}" in EXPECTED:
            return f"{name}/{theirs}"
    raise AssertionError(f"{name}: transformers gave no output for kbert's {key}: "
                         f"{sorted(k for k in EXPECTED if k.startswith(name + '/'))}")


def _check(tmp_path, families, tasks):
    ours = script.write_checkpoints(tmp_path, families=families, tasks=tasks)
    names = sorted({key.split("/")[0] for key in ours})
    written = [p.name for p in tmp_path.iterdir()]
    assert sorted(written) == names
    for name in names:
        entries = [(name, tmp_path / name)]
        if (tmp_path / name / "generator").is_dir():
            entries.append((f"{name}/generator", tmp_path / name / "generator"))
        for key, folder in entries:
            verdict = VERDICT["checkpoints"][key]
            # What transformers read is what kbert writes today.
            found, read = script.digests(folder), verdict["digests"]
            changed = sorted(f for f in set(found) | set(read) if found.get(f) != read.get(f))
            assert not changed, (
                f"{key}: kbert no longer writes what transformers read ({changed} differ); "
                "run tests/fixtures/make_transformers_reads_kbert.py (see its docstring)")
            # ... and transformers took every weight, as written.
            for what in ("missing", "unexpected", "replaced"):
                assert verdict.get(what, []) == [], (key, what, verdict[what])
    for key, value in ours.items():
        name, output = key.split("/", 1)
        if output not in SAME_OUTPUT:
            continue
        theirs = EXPECTED[_transformers_key(name, output)]
        if output == "mlm_logits" and theirs.shape != value.shape:  # every position
            theirs = np.take_along_axis(theirs, script.POSITIONS[..., None], 1)
        if name == "mobile_bert" and output == "mlm_logits":
            # kbert writes MobileBERT with a zero [PAD] row (tests/convert/
            # test_mobile_bert_pad_row.py: transformers reads that row at padded positions),
            # so transformers' tied output layer scores [PAD] by its bias alone where kbert's
            # model uses its own row. Every other token's score is compared.
            pad = script.TOKENS.index("[PAD]")
            value, theirs = np.delete(value, pad, -1), np.delete(theirs, pad, -1)
        np.testing.assert_allclose(value, theirs, atol=ATOL, rtol=0, err_msg=key)
    return names


def test_the_fixture_covers_every_family_and_task_kind():
    checkpoints = VERDICT["checkpoints"]
    assert {f for f in script.FAMILIES} <= set(checkpoints)
    for family in script.TASK_FAMILIES:
        for kind in script.TASK_MODELS:
            assert f"{family}_{kind}" in checkpoints, (family, kind)
    assert checkpoints["electra/generator"]["class"] == "ElectraForMaskedLM"
    assert checkpoints["bert_seq_multi"]["class"] == "BertForSequenceClassification"
    assert checkpoints["bert_st_mean_normalize"]["modules"] == [
        "Transformer", "Pooling", "Normalize"]
    assert VERDICT["transformers"].startswith("4.57.")


def test_transformers_reads_the_pretrainers_kbert_writes(tmp_path):
    assert _check(tmp_path, script.FAMILIES, tasks=False) == sorted(script.FAMILIES)


@pytest.mark.slow
@pytest.mark.parametrize("family", script.TASK_FAMILIES)
def test_transformers_reads_the_task_models_kbert_writes(family, tmp_path):
    names = _check(tmp_path, (family,), tasks=True)
    assert names == sorted([family] + [f"{family}_{kind}" for kind in script.TASK_MODELS])
