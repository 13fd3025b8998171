"""Runs several commands of one tool in ONE process, each as `python tool.py FLAGS...` runs
(`runpy` runs the tool's file as __main__; absl's `app.run` parses the flags again on a rerun,
and they are reset to their defaults before each command): TensorFlow's import (~5 s) is paid
once, not once per command. Each command's exit code, stdout and stderr come back apart, as a
`subprocess.CompletedProcess`: a `SystemExit` is its exit code (a message: printed, code 1,
as Python does), any other exception is printed with its traceback (code 1)."""

import json
import subprocess
import sys

_MARK = "=== one_process: next command ==="

_DRIVER = f"""
import json, runpy, sys, traceback

from absl import flags

MARK = {_MARK!r}
tool, commands = sys.argv[1], json.loads(sys.argv[2])
for args in commands:
    for stream in (sys.stdout, sys.stderr):
        stream.write(MARK + "\\n")
        stream.flush()
    flags.FLAGS.unparse_flags()  # each command starts from the flags' defaults
    sys.argv = [tool, *args]
    try:
        runpy.run_path(tool, run_name="__main__")
        code = 0
    except SystemExit as exit_:
        code = exit_.code
        if isinstance(code, str):
            sys.stderr.write(code + "\\n")
            code = 1
        code = 0 if code is None else code
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    sys.stdout.write(f"{{MARK}} exit {{code}}\\n")
    sys.stdout.flush()
"""


def run_commands(tool, commands, timeout=600, **kwargs):
    """[CompletedProcess] of `tool` (a path) run with each list of flags in `commands`, in
    order, in one process; `kwargs` go to `subprocess.run` (env, cwd)."""
    result = subprocess.run([sys.executable, "-c", _DRIVER, str(tool), json.dumps(commands)],
                            capture_output=True, text=True, timeout=timeout, **kwargs)
    outs = result.stdout.split(_MARK + "\n")[1:]
    errs = result.stderr.split(_MARK + "\n")[1:]
    assert len(outs) == len(errs) == len(commands), (
        f"the driver stopped (exit {result.returncode}):\n{result.stderr[-3000:]}")
    done = []
    for args, out, err in zip(commands, outs, errs):
        out, _, code = out.rpartition(f"{_MARK} exit ")
        done.append(subprocess.CompletedProcess([str(tool), *args], int(code), out, err))
    return done
