"""The installed programs (kbert/programs/, setup.py's console entry points) and their clone
wrappers (tools/*.py), and the shipped flagfiles found by name."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kbert import programs

ROOT = Path(__file__).resolve().parent.parent


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
            "--flagfile=tools/flags/mrpc.flags", "--train_steps=3"]
    assert programs.resolve_flagfiles(argv) == [
        "kbert-pretrain", f"--flagfile={shipped['quickstart']}",
        f"--flagfile={shipped['sst2']}", "--flagfile=tools/flags/mrpc.flags", "--train_steps=3"]
    with pytest.raises(SystemExit) as exit_:
        programs.resolve_flagfiles(["kbert-pretrain", "--flagfile=quikstart"])
    assert exit_.value.code == 1
    message = capsys.readouterr().err
    assert "--flagfile=quikstart: no such file, nor a shipped flagfile" in message
    assert "quickstart" in message and "bert_base_phase1" in message


@pytest.mark.slow  # two TensorFlow start-ups
def test_the_installed_program_runs_a_shipped_flagfile_by_name(tmp_path):
    """`kbert-pretrain`, the console script pip installed beside this Python, from a folder
    that is not the clone: --flagfile=quickstart is read (its flags reach --helpshort's
    parse), a name that is no flagfile is refused with the shipped names."""
    script = Path(sys.executable).parent / "kbert-pretrain"
    assert script.exists(), f"{script} is not installed: pip install -e . (setup.py's entry_points)"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    ok = subprocess.run([str(script), "--flagfile=quickstart", "--helpshort"], cwd=tmp_path,
                        env=env, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr[-2000:]
    first = (ROOT / "kbert" / "programs" / "pretrain.py").read_text().split('"""')[1]
    assert ok.stdout.splitlines()[0] == first.splitlines()[0]
    bad = subprocess.run([str(script), "--flagfile=no_such_recipe"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1
    assert "--flagfile=no_such_recipe: no such file, nor a shipped flagfile" in bad.stderr
