"""What a newcomer's terminal shows (issue 30): a program's first lines are its own, not
TensorFlow's C++ start-up log (kbert/programs/quiet.py), unless the user asks for that log
with TF_CPP_MIN_LOG_LEVEL (docs/pretraining.md, "Progress and logs")."""

import os
import subprocess
import sys

from tests.docs.blocks import ROOT

PROGRAM = ROOT / "kbert" / "programs" / "pretrain.py"


def test_a_tool_starts_with_its_own_first_line():
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # a user's shell
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "pretrain.py"), "--helpshort"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    first = PROGRAM.read_text().split('"""')[1].splitlines()[0]
    assert result.stdout.splitlines()[:1] == [first], result.stdout[:500]
    assert result.stderr == "", f"printed before the tool's first line:\n{result.stderr[:2000]}"


def test_the_log_level_the_user_sets_wins():
    from kbert.programs import quiet  # TensorFlow is imported already: nothing to capture

    info = ("I0000 00:00:1795684276.038433   25526 port.cc:153] oneDNN custom operations are on."
            "\n")
    error = ("E0000 00:00:1795684493.692402   27126 cuda_platform.cc:52] failed call to cuInit: "
             "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n")
    fatal = "F0000 00:00:1795684493.692402   27126 cpu_feature_guard.cc:1] illegal instruction\n"
    older = "2024-01-02 03:04:05.678901: I tensorflow/core/platform/cpu_feature_guard.cc:1] x\n"
    before = quiet.BEFORE_INITIALIZE_LOG + " are written to STDERR\n"
    python = "/x.py:4: UserWarning: a python warning\n"

    environ = {}
    assert quiet.min_level(environ) == 3 and environ == {"TF_CPP_MIN_LOG_LEVEL": "3"}
    assert [quiet.shown(line, 3) for line in (info, error, older, before, fatal, python)] == [
        False, False, False, False, True, True]
    assert quiet.min_level({"TF_CPP_MIN_LOG_LEVEL": "0"}) == 0
    assert all(quiet.shown(line, 0) for line in (info, error, older, before, fatal, python))
    assert quiet.min_level({"TF_CPP_MIN_LOG_LEVEL": "2"}) == 2
    assert [quiet.shown(line, 2) for line in (info, error, before)] == [False, True, False]
    assert quiet.min_level({"TF_CPP_MIN_LOG_LEVEL": "verbose"}) == 0  # not a number: all of it
