"""`kbert-convert` from a clone: kbert/programs/convert_checkpoint.py, whose docstring
(and --help) says what it does."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kbert.programs import convert_checkpoint  # noqa: E402

if __name__ == "__main__":
    convert_checkpoint.run()
