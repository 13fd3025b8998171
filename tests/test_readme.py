"""The README's Quickstart must work as written."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

import kbert

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def quickstart_block(marker):
    match = re.search(rf"<!-- quickstart:{marker} -->\n```bash\n(.*?)\n```", README, re.S)
    assert match, f"README has no ```bash block after <!-- quickstart:{marker} -->"
    return match.group(1)


def test_test_command_is_what_ci_runs():
    command = quickstart_block("tests")
    assert command.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install -e")
    assert "pytest" in command and "|| true" not in command
    assert "quickstart:tests" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.slow
def test_main_example_runs(tmp_path):
    block = quickstart_block("main")
    setup, _, rest = block.partition("python - <<'PY'\n")
    assert "pip install -e ." in setup
    code = rest.rsplit("\nPY", 1)[0]
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "bert_tiny.keras").exists()
    assert "'mlm_accuracy'" in result.stdout and "'nsp_loss'" in result.stdout


def test_parameter_table_matches_the_models():
    for name in ("bert_tiny", "bert_mini"):
        model = kbert.presets.load(name)
        row = f"{model.backbone.count_params():,} / {model.count_params():,}"
        assert f"| {name} |" in README and row in README, (name, row)
