"""Runs a training tool in a subprocess that kill -9s itself right after it has saved a
given checkpoint: the same interruption as a kill from outside, without the race of a
test that polls for the checkpoint while the run goes on (a tiny model can finish its
remaining epochs between two polls)."""

import signal
import subprocess
import sys

# Patches kbert.training.callbacks.Checkpoints in the tool's own process, then runs the
# tool as `python tool.py args...` would.
_WRAPPER = """
import os, runpy, signal, sys
from kbert.training import callbacks

tool, step = sys.argv[1], int(sys.argv[2])
save = callbacks.Checkpoints.on_epoch_end

def on_epoch_end(self, epoch, logs=None):
    save(self, epoch, logs)
    if self.manager.latest_checkpoint.endswith(f"ckpt-{step}"):
        os.kill(os.getpid(), signal.SIGKILL)

callbacks.Checkpoints.on_epoch_end = on_epoch_end
sys.argv = [tool, *sys.argv[3:]]
runpy.run_path(tool, run_name="__main__")
"""


def run_killed_after_checkpoint(tool, args, step, env, cwd, timeout=600):
    """Runs `tool args` until checkpoint ckpt-{step} is saved, then kill -9; asserts that
    the kill, not the end of the run, stopped it."""
    result = subprocess.run([sys.executable, "-c", _WRAPPER, str(tool), str(step), *args],
                            capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    assert result.returncode == -signal.SIGKILL, (
        f"expected a kill after ckpt-{step}, the run ended with {result.returncode}:\n"
        + result.stderr[-3000:])
    return result
