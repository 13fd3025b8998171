"""python -m benchmarks NAME [--flags]: as python tools/benchmark.py NAME [--flags]."""

from benchmarks.cli import run

run()
