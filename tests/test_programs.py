"""The installed programs (kbert/programs/, setup.py's console entry points) and their clone
wrappers (tools/*.py), and the shipped flagfiles found by name."""

import os
import re
import subprocess
import sysconfig
from pathlib import Path

import pytest

from kbert import programs

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINT = ROOT / "tests" / "fixtures" / "hf_tasks" / "distil_bert_seq_single"


def test_the_entry_points_are_the_programs_and_each_has_its_tool():
    setup = (ROOT / "setup.py").read_text(encoding="utf-8")
    declared = dict(re.findall(r'"(kbert-[\w-]+) = kbert\.programs\.(\w+):run"', setup))
    assert declared == programs.PROGRAMS
    for module in programs.PROGRAMS.values():
        assert (ROOT / "kbert" / "programs" / f"{module}.py").exists(), module
        tool = (ROOT / "tools" / f"{module}.py").read_text(encoding="utf-8")
        # A thin wrapper: the program's module, run.
        assert f"from kbert.programs import {module}" in tool and f"{module}.run()" in tool
        assert len(tool.splitlines()) < 20, module


def test_the_shipped_flagfiles_are_found_by_name(capsys):
    shipped = programs.flagfiles()
    assert set(shipped) == {p.stem for p in (ROOT / "tools" / "flags").glob("*.flags")}
    assert shipped["quickstart"].read_text() == (
        ROOT / "tools" / "flags" / "quickstart.flags").read_text()
    argv = ["kbert-pretrain", "--flagfile=quickstart", "--flagfile=sst2.flags",
            "--flagfile=tools/flags/mrpc.flags", "--flagfile", "stsb", "--train_steps=3"]
    assert programs.resolve_flagfiles(argv) == [
        "kbert-pretrain", f"--flagfile={shipped['quickstart']}",
        f"--flagfile={shipped['sst2']}", "--flagfile=tools/flags/mrpc.flags",
        f"--flagfile={shipped['stsb']}", "--train_steps=3"]
    with pytest.raises(SystemExit) as exit_:
        programs.resolve_flagfiles(["kbert-pretrain", "--flagfile=quikstart"])
    assert exit_.value.code == 1
    message = capsys.readouterr().err
    assert "--flagfile=quikstart: no such file, nor a shipped flagfile" in message
    assert "quickstart" in message and "bert_base_phase1" in message


@pytest.mark.slow  # two TensorFlow start-ups
def test_the_installed_program_runs_a_shipped_flagfile_by_name(tmp_path):
    """`kbert-pretrain`, the console script pip installed beside this Python, from a folder
    that is not the clone: --flagfile=quickstart is read (--dry_run prints the config its
    flags make, with a flag after it winning), a name that is no flagfile is refused with the
    shipped names."""
    import json

    script = Path(sysconfig.get_path("scripts")) / "kbert-pretrain"
    assert script.exists(), f"{script} is not installed: pip install -e . (setup.py's entry_points)"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    ok = subprocess.run([str(script), "--flagfile=quickstart", "--train_steps=700", "--dry_run"],
                        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr[-2000:]
    config = json.loads(ok.stdout[ok.stdout.index("{"):])
    assert (config["preset"], config["model_dir"], config["train_steps"]) == (
        "bert_tiny", "runs/quickstart", 700)
    assert not (tmp_path / "runs").exists()  # --dry_run runs nothing
    bad = subprocess.run([str(script), "--flagfile=no_such_recipe"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1
    assert "--flagfile=no_such_recipe: no such file, nor a shipped flagfile" in bad.stderr


@pytest.mark.slow  # a TensorFlow start-up and two exports
def test_kbert_export_writes_what_the_pipeline_answers(tmp_path):
    """`kbert-export` on a fine-tuned Hugging Face checkpoint: the SavedModel it writes
    answers as the pipeline on the checkpoint does, with the option it was given fixed."""
    import kbert

    script = Path(sysconfig.get_path("scripts")) / "kbert-export"
    assert script.exists(), f"{script} is not installed: pip install -e . (setup.py's entry_points)"
    done = subprocess.run(
        [str(script), "--task=sentiment-analysis", f"--model={CHECKPOINT}", "--output=export",
         "--pipeline_option=top_k=2"], cwd=tmp_path, capture_output=True, text=True,
        timeout=600, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Exported text-classification on" in done.stdout
    texts = ["a good film", "nothing at all"]
    expected = kbert.pipeline("text-classification", model=str(CHECKPOINT))(texts, top_k=2)
    served = kbert.pipeline("text-classification", model=str(tmp_path / "export"))(texts)
    for want, got in zip(expected, served):
        assert [a["label"] for a in got] == [a["label"] for a in want]
        assert [a["score"] for a in got] == pytest.approx([a["score"] for a in want], abs=1e-5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]  # no staging left


def test_kbert_export_keeps_what_output_holds(tmp_path):
    """An existing --output is refused before anything loads, an export that fails leaves it
    as it was, and --overwrite replaces it once the new one is written; a remote --output is
    refused."""
    from kbert.programs.export_config import ExportConfig, export
    from kbert.training.config_fields import ConfigError

    (tmp_path / "model.tflite").write_text("an earlier export")
    config = dict(task="text-classification", model=str(CHECKPOINT), format="tflite",
                  output=str(tmp_path / "model.tflite"))
    with pytest.raises(ConfigError, match="model.tflite exists: pass --overwrite to replace"):
        export(ExportConfig(**config))
    # Loads, then fails in the export: a TFLite model cannot refuse a long text.
    with pytest.raises(ValueError, match="export with truncation=True"):
        export(ExportConfig(**config, overwrite=True))
    assert (tmp_path / "model.tflite").read_text() == "an earlier export"
    with pytest.raises(ConfigError, match="gs://b/m: a local path"):
        export(ExportConfig(**dict(config, output="gs://b/m")))
    # --overwrite that succeeds: the new export in place of the old one, nothing beside it.
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "stale").write_text("an earlier export")
    export(ExportConfig(task="text-classification", model=str(CHECKPOINT), overwrite=True,
                        output=str(tmp_path / "export")))
    assert (tmp_path / "export" / "saved_model.pb").exists()
    assert not (tmp_path / "export" / "stale").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "model.tflite"]


def test_the_install_page_lists_every_program():
    page = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `(kbert-[\w-]+)` \|", page, flags=re.M)
    assert listed == list(programs.PROGRAMS), listed
