"""Speed of kbert beside its peer, measured in one run on the same machine:

    python tools/benchmark.py NAME [--flags]      (NAME: train_step, preprocess, serve, ...)

The benchmarks live in the repository's benchmarks/ package (one module each; the flags and
what each measures: benchmarks/cli.py and the modules' docstrings; `--helpfull` lists every
flag). Each writes its figures to benchmarks/results/NAME.json, from which
`python tools/benchmark.py report` makes the summary table and the plots of docs/benchmarks.md.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.cli import run  # noqa: E402

if __name__ == "__main__":
    run()
