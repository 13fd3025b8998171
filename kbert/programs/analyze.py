"""Look inside a model: attention pictures, per-head attention statistics (Clark et al.
2019), a layer-wise linear probe and a self-contained HTML view of attention, in one folder.

    kbert-analyze --model=bert_base --input=sentences.txt --output_dir=analysis
    kbert-analyze --model=runs/pretrain --text="The cat sat on the mat." \\
        --layer=3 --head=1 --words --output_dir=analysis
    kbert-analyze --model=bert_base --probe_input=pos.conll --output_dir=analysis

Every flag is a field of `kbert.analysis.run.AnalysisConfig` (same name, same help), so
Python code can do what this program does (`kbert.analysis.run.run_analysis`).

From a clone, `python tools/analyze.py` runs the same program with the same flags.
"""

from kbert import programs
from kbert.programs.quiet import import_tensorflow_quietly

import_tensorflow_quietly()  # first: keeps TensorFlow's C++ start-up log quiet

from kbert.analysis import run as analysis  # noqa: E402

__doc__ += "\n" + analysis.define_flags()


def run():
    """The console entry point `kbert-analyze`."""
    programs.run(analysis.main, __doc__)

