"""`kbert-create-pretraining-data` from a clone: kbert/programs/create_pretraining_data.py,
whose docstring (and --help) says what it does."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kbert.programs import create_pretraining_data  # noqa: E402

if __name__ == "__main__":
    create_pretraining_data.run()
