"""`kbert-build-vocab` from a clone: kbert/programs/build_vocab.py, whose docstring
(and --help) says what it does."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kbert.programs import build_vocab  # noqa: E402

if __name__ == "__main__":
    build_vocab.run()
