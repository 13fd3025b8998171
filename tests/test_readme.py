"""The README's Quickstart must work as written (tests/docs runs the other examples)."""

import re
from pathlib import Path

import pytest

import kbert

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
PRESETS_PAGE = (ROOT / "docs" / "checkpoints.md").read_text()


def quickstart_block(marker):
    match = re.search(rf"<!-- quickstart:{marker} -->\n```bash\n(.*?)\n```", README, re.S)
    assert match, f"README has no ```bash block after <!-- quickstart:{marker} -->"
    return match.group(1)


def test_test_command_is_what_ci_runs():
    command = quickstart_block("tests")
    assert command.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -e")
    assert 'pip install -e ".[test]" -c constraints.txt' in command  # the tested versions
    assert "pytest" in command and "|| true" not in command
    assert "quickstart:tests" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.slow
def test_main_command_runs(tmp_path, monkeypatch):
    """The Quickstart's main job, shortened to 20 steps in one loop and a vocabulary of 1,000
    (later flags override the flagfile), run by tools/pretrain.py's main in this process
    (tests/tools/test_pretrain.py starts the tool as a program: its --help and a bad flag)."""
    from tests.tools.test_pretrain import run_here

    block = quickstart_block("main")
    setup, _, job = block.partition("pip install -e . -c constraints.txt && ")
    assert setup.startswith("python3 -m venv .venv") and job.startswith("python tools/pretrain.py")
    args = job.split()[2:]  # after "python tools/pretrain.py"
    # Without XLA: its compile costs more than 20 steps (test_pretrain.py's test_it_learns
    # runs the XLA step).
    short = ["--train_steps=20", "--steps_per_loop=20", "--warmup_steps=2",
             f"--model_dir={tmp_path}/run", f"--export_dir={tmp_path}/export",
             "--learned_vocabulary_size=1000", "--nojit_compile"]
    monkeypatch.chdir(ROOT)  # the flagfile's path is relative to the repository
    result = run_here([*args, *short])
    assert "Final (20 steps): mlm_accuracy" in result.stdout and "nsp_accuracy" in result.stdout
    assert (tmp_path / "export" / "saved_model.pb").exists()
    assert (tmp_path / "export" / "vocab.txt").exists()


def test_parameter_table_matches_the_models():
    for name in ("bert_tiny", "bert_mini"):
        model = kbert.presets.load(name, weights=None)
        row = f"{model.backbone.count_params():,} / {model.count_params():,}"
        assert f"| {name} |" in PRESETS_PAGE and row in PRESETS_PAGE, (name, row)
