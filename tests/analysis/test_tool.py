"""tools/analyze.py end to end on a tiny checkpoint, and its errors for bad flags (each names
the flag, the value and what is allowed)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "fixtures" / "hf_tiny" / "tiny_bert_general"
CONLL = "".join(f"{a} D\n{b} N\n{c} V\n.\tP\n\n" for a, b, c in [
    ("the", "words", "were"), ("a", "way", "was"), ("the", "time", "is"), ("a", "word", "had"),
    ("the", "use", "was"), ("an", "each", "are"), ("the", "way", "is"), ("a", "time", "had")])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("analyze")
    (folder / "texts.txt").write_text("the words were in the way.\n\nhe said: one, two!\n"
                                      "they had some time\n")
    (folder / "tags.conll").write_text(CONLL.replace("\t", " "))
    return folder


def test_tool_writes_pictures_statistics_html_and_probe(files, tmp_path):
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "analyze.py"), f"--model={TINY}",
         f"--input={files / 'texts.txt'}", "--text=the way it was", "--layer=1", "--head=-1",
         f"--probe_input={files / 'tags.conll'}", "--words", "--html_texts=2",
         f"--output_dir={out}"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((out / "analysis.json").read_text())
    expected = {"attention_text0_layer1_head1.png", "attention_text0_layer1_head1.svg",
                "attention_grid_text0.png", "attention_grid_text0.svg", "head_statistics.png",
                "head_statistics.svg", "head_statistics.md", "attention.html", "probe.png",
                "probe.svg", "probe.md"}
    assert set(summary["files"]) == expected
    for name in expected:
        if not name.endswith(".md"):
            assert (out / name).stat().st_size > 2000, name
    # Tables: a row per head (2 layers x 2 heads); a row per hidden state and the baseline.
    assert len((out / "head_statistics.md").read_text().splitlines()) == 2 + 4
    assert len((out / "probe.md").read_text().splitlines()) == 2 + 3 + 1
    assert summary["texts"] == 4 and summary["truncated"] == 0
    sep = summary["heads"]["statistics"]["sep"]
    assert len(sep) == 2 and len(sep[0]) == 2 and all(0 <= v <= 1 for row in sep for v in row)
    probe = summary["probe"]
    assert len(probe["accuracy"]) == 3 and probe["label_names"] == ["D", "N", "P", "V"]
    assert probe["train_count"] + probe["test_count"] == 32
    # --text is drawn first, merged into words (--words); the probe's table is printed.
    svg = (out / "attention_text0_layer1_head1.svg").read_text()
    assert ">the way it was<" not in svg and ">way<" in svg and "layer 1, head 1" in svg
    assert "| majority class |" in result.stdout and "Wrote 12 files" in result.stdout
    assert '"text":"the way it was"' in (out / "attention.html").read_text()


def run(args, tmp_path):
    """The program's main on `args`, in this process: its UsageError / SystemExit."""
    from absl import flags

    from kbert.analysis.run import AnalysisConfig, run_analysis
    from kbert.training import config_fields

    values = flags.FlagValues()
    config_fields.define_program(AnalysisConfig, values)
    values(["analyze.py", f"--output_dir={tmp_path / 'out'}", *args])
    config_fields.run_program(AnalysisConfig, run_analysis, ["analyze.py"], values)


@pytest.mark.parametrize("args, message", [
    (["--formats=png,jpg"], "--formats='png,jpg': each must be one of png, svg"),
    (["--input=missing.txt"], "--input='missing.txt': no such file"),
    ([], "Nothing to analyse: give --input"),
    (["--text=a", "--test_fraction=1"], "--test_fraction=1.0 must be between 0 and 1"),
    (["--text=a", "--max_length=2"], "--max_length must be an integer >= 3, got 2"),
    (["--text=a", "--model=no/such/model"], "--model: 'no/such/model' does not exist"),
    (["--text=a", f"--model={TINY}", "--layer=2"],
     "--layer=2 / --head=0: layer=2 is out of range: the model has 2 layers"),
])
def test_bad_flags_are_usage_errors_naming_the_value(args, message, tmp_path):
    from absl import app

    with pytest.raises(app.UsageError) as error:
        model = [] if any(a.startswith("--model") for a in args) else ["--model=bert_tiny"]
        run(args + model, tmp_path)
    assert message in str(error.value)
    assert not (tmp_path / "out").exists()


def test_unknown_probe_task_is_refused_by_the_flag_parser(tmp_path):
    from absl.flags import IllegalFlagValueError

    with pytest.raises(IllegalFlagValueError, match=r"--probe_task=pos: value should be one of <tagging\|classification>"):
        run(["--model=bert_tiny", "--text=a", "--probe_task=pos"], tmp_path)
