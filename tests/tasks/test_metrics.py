"""The task folders' metrics (`kbert/tasks/<task>/metrics.py`) come from the libraries that
define them (scikit-learn, scipy, seqeval; SQuAD's official normalisation written out as its
script has it) and need no TensorFlow or Keras. Each folder's tests/tasks/<task>/test_metrics.py
compares its numbers with the libraries and hand-worked cases."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_metrics_need_no_tensorflow():
    assert not (ROOT / "kbert" / "tasks" / "_seqeval.py").exists()
    assert not (ROOT / "kbert" / "tasks" / "metrics.py").exists()  # each task's is its own
    paths = sorted((ROOT / "kbert" / "tasks").glob("*/metrics.py"))
    assert [p.parent.name for p in paths] == [
        "extractive_summarization", "question_answering", "text_classification",
        "token_classification"]
    imported, required = set(), set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported |= {f"{node.module}.{alias.name}" for alias in node.names}
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr == "require" and node.args
                  and isinstance(node.args[0], ast.Constant)):
                required.add(node.args[0].value.split(".")[0])
    # The libraries are the extras, imported on first use (kbert._extras.require, which
    # imports nothing of kbert's); f-strings name seqeval's modules.
    assert imported == {"collections", "re", "string", "warnings", "numpy", "kbert._extras"}
    assert required == {"scipy", "sklearn", "rouge_score"}
    assert '_extras.require(f"seqeval.' in (paths[3]).read_text()
