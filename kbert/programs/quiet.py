"""Keeps TensorFlow's C++ log off the terminal unless asked for: every program calls
`import_tensorflow_quietly()` before its other imports.

TensorFlow's C++ code logs through absl, and what it logs while it loads (before anything calls
`absl::InitializeLog()`) reaches stderr whatever `TF_CPP_MIN_LOG_LEVEL` says:

    WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
    I0000 00:00:... port.cc:153] oneDNN custom operations are on. ...
    E0000 00:00:... cuda_platform.cc:52] failed call to cuInit: ... UNKNOWN ERROR (303)

So that a program's first lines are its own, `import_tensorflow_quietly` sets
`TF_CPP_MIN_LOG_LEVEL` to 3 (C++ messages below FATAL are not printed; errors still reach
Python as exceptions) unless the user set it, then imports TensorFlow with file descriptor 2
captured and writes back what is not a C++ log line under that level (Python's warnings,
anything else). To see the log: `TF_CPP_MIN_LOG_LEVEL=0 kbert-pretrain ...` (0: everything;
1: warnings and up; 2: errors and up).
"""

import os
import re
import sys
import tempfile

DEFAULT_LEVEL = "3"
SEVERITIES = "IWEF"  # TF_CPP_MIN_LOG_LEVEL 0, 1, 2, 3
# absl's prefix (I0000 00:00:1795684276.038433   25526 port.cc:153] ...) and TensorFlow's
# older one (2024-01-02 03:04:05.678901: I tensorflow/core/...).
LOG_LINE = re.compile(r"^(?:([IWEF])\d{4} [\d:.]+ +\d+ [^ \]]+:\d+\]"
                      r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: ([IWEF]) )")
BEFORE_INITIALIZE_LOG = "WARNING: All log messages before absl::InitializeLog() is called"


def min_level(environ=os.environ):
    """The level asked for (`TF_CPP_MIN_LOG_LEVEL`, set to 3 if unset): 0 to 3."""
    value = environ.setdefault("TF_CPP_MIN_LOG_LEVEL", DEFAULT_LEVEL)
    try:
        return min(max(int(value), 0), 3)
    except ValueError:
        return 0  # not a number: TensorFlow prints everything, so do we


def shown(line, level):
    """Whether `line` of stderr is printed at TF_CPP_MIN_LOG_LEVEL `level`."""
    if line.startswith(BEFORE_INITIALIZE_LOG):
        return level == 0
    match = LOG_LINE.match(line)
    return match is None or SEVERITIES.index(match.group(1) or match.group(2)) >= level


def import_tensorflow_quietly(environ=os.environ):
    """Imports TensorFlow with the C++ log lines under `min_level` left out of stderr."""
    level = min_level(environ)
    if level == 0 or "tensorflow" in sys.modules:
        import tensorflow  # noqa: F401
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow  # noqa: F401
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            text = captured.read().decode("utf-8", "replace")
            sys.stderr.writelines(line for line in text.splitlines(keepends=True)
                                  if shown(line, level))
            sys.stderr.flush()
