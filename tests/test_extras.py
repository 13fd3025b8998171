"""The core works without the extras of setup.py, and a feature that needs one says which
(kbert/_extras.py).

The packages of every extra are blocked (`sys.modules[name] = None`, as if not installed) in a
subprocess, which then imports kbert, loads a preset, runs a pipeline on a model it makes and
calls one feature of each extra.
"""

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from kbert import _extras

ROOT = Path(__file__).resolve().parent.parent

# The import names of the extras' packages (and of what they bring: nltk with rouge-score).
BLOCKED = ("matplotlib", "sklearn", "scipy", "seqeval", "rouge_score", "nltk", "keras_hub",
           "tensorflow_datasets", "apache_beam", "ai_edge_litert", "tf2onnx", "onnx",
           "onnxruntime")

WITHOUT_EXTRAS = """
import json, sys
for name in {blocked!r}:
    sys.modules[name] = None
import numpy as np
import kbert
from kbert.tasks import TextClassifier
from kbert.tokenizers import WordPieceTokenizer

pretrainer = kbert.load("bert_tiny", weights=None).model
result = {{"pretrainer": type(pretrainer).__name__}}
vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film"]
pipe = kbert.pipeline("text-classification", tokenizer=WordPieceTokenizer(vocabulary),
                      model=TextClassifier(pretrainer.backbone, label_names=["neg", "pos"]))
result["answer"] = pipe("a good film")

from kbert.analysis import ProbeData, ProbeResult, pictures, probing
from kbert.convert import keras_hub
from kbert.data import corpora
from kbert.serving import runtimes
from kbert.tasks.extractive_summarization import metrics as summary_metrics
from kbert.tasks.text_classification import metrics as glue_metrics
from kbert.tasks.token_classification import metrics as entity_metrics

features = {{
    "metrics": lambda: glue_metrics.accuracy([1, 0], [1, 1]),
    "metrics (scipy)": lambda: glue_metrics.pearson([0.5, 1.0], [0.4, 0.9]),
    "metrics (seqeval)": lambda: entity_metrics.entity_scores(["B-PER", "O"], ["B-PER", "O"]),
    "summarization": lambda: summary_metrics.rouge_scores(["a text"], ["a text"]),
    "analysis": lambda: pictures.plot_probe(
        ProbeResult("tagging", [0.5, 0.7], 0.5, 8, 4, "token"), "probe.png"),
    "analysis (sklearn)": lambda: probing.probe_layers(ProbeData(
        np.zeros((2, 4, 3), "float32"), np.array([0, 1, 0, 1]), np.array([0, 1, 2, 3]))),
    "keras-hub": lambda: keras_hub.read("no_such_preset"),
    "datasets": lambda: corpora.tfds_documents("wikipedia/20230601.en"),
    "tflite": lambda: runtimes.interpreter("model.tflite"),
    "onnx": lambda: kbert.pipeline("text-classification", model=pipe.source.runner.model,
                                   tokenizer=pipe.tokenizer, runtime="onnxruntime"),
}}
result["errors"] = {{}}
for extra, feature in features.items():
    try:
        feature()
        result["errors"][extra] = None
    except ImportError as error:
        result["errors"][extra] = str(error)
result["imported"] = sorted(name for name in sys.modules
                            if name.split(".")[0] in {blocked!r} and sys.modules[name])
print("RESULT", json.dumps(result))
"""


def test_the_core_works_without_the_extras_and_each_feature_names_its_extra(tmp_path):
    script = WITHOUT_EXTRAS.format(blocked=BLOCKED)
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3"))
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.split("RESULT ", 1)[1])
    assert result["pretrainer"] == "BertPretrainer"
    [answer] = result["answer"]
    assert answer["label"] in ("neg", "pos") and 0 <= answer["score"] <= 1
    assert result["imported"] == []
    missing = {"metrics": "sklearn", "metrics (scipy)": "scipy", "metrics (seqeval)": "seqeval",
               "summarization": "rouge_score", "analysis": "matplotlib",
               "analysis (sklearn)": "sklearn", "keras-hub": "keras_hub",
               "datasets": "tensorflow_datasets", "tflite": "ai_edge_litert", "onnx": "tf2onnx"}
    for feature, module in missing.items():
        extra = feature.split(" ")[0]
        message = result["errors"][feature]
        assert message and message.endswith(
            f'needs {module}, which is not installed: pip install "kbert-keras[{extra}]".'), (
            feature, message)
    assert not (tmp_path / "probe.png").exists()


def _setup_extras():
    """The keys of setup.py's extras_require: its own and those of its EXTRAS dict."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    dicts = [node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
             and [getattr(target, "id", None) for target in node.targets] == ["EXTRAS"]]
    dicts += [node.value for node in ast.walk(tree)
              if isinstance(node, ast.keyword) and node.arg == "extras_require"]
    assert len(dicts) == 2 and all(isinstance(d, ast.Dict) for d in dicts), dicts
    return {key.value for d in dicts for key in d.keys if isinstance(key, ast.Constant)}


def _named_extras():
    """(file:line, extra) of every `_extras.require(...)` and `install_command(...)` in kbert,
    tools/ and benchmarks/ whose extra is a literal."""
    for path in [*ROOT.joinpath("kbert").rglob("*.py"), *ROOT.joinpath("tools").glob("*.py"),
                 *ROOT.joinpath("benchmarks").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                position = {"require": 1, "install_command": 0}.get(node.func.attr)
                if position is not None and len(node.args) > position and \
                        isinstance(node.args[position], ast.Constant):
                    yield f"{path.relative_to(ROOT)}:{node.lineno}", node.args[position].value


def test_every_extra_kbert_names_is_one_setup_py_gives():
    extras = _setup_extras()
    assert {"analysis", "summarization", "keras-hub", "datasets", "metrics", "beam", "tflite",
            "onnx", "all", "test", "torch"} <= extras
    named = list(_named_extras())
    assert len(named) >= 10, named
    assert not [(where, extra) for where, extra in named if extra not in extras]
    assert _extras.install_command("beam") == 'pip install "kbert-keras[beam]"'


def test_the_install_page_lists_every_extra_once():
    """docs/install.md's table of extras is setup.py's (the test extra is the project's
    own)."""
    page = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `([\w-]+)` \|", page.split("## Extras", 1)[1].split("##", 1)[0],
                        flags=re.M)
    assert sorted(listed) == sorted(_setup_extras() - {"test"}), listed
