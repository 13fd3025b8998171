"""Look inside a model: attention pictures, per-head attention statistics (Clark et al.
2019), a layer-wise linear probe and a self-contained HTML view of attention, in one folder.

    python tools/analyze.py --model=bert_base --input=sentences.txt --output_dir=analysis
    python tools/analyze.py --model=runs/pretrain --text="The cat sat on the mat." \\
        --layer=3 --head=1 --words --output_dir=analysis
    python tools/analyze.py --model=bert_base --probe_input=pos.conll --output_dir=analysis

Every flag is a field of `kbert.analysis.run.AnalysisConfig` (same name, same help), so
Python code can do what this program does (`kbert.analysis.run.run_analysis`).
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402

from kbert.analysis import run  # noqa: E402

__doc__ += "\n" + run.define_flags()

if __name__ == "__main__":
    app.run(run.main)
