"""kbert's own directory: model.keras (architecture + weights) + vocab.txt + tokenizer_config.json.

`tools/convert_checkpoint.py --to=kbert` writes it; `kbert.export.load_model(dir/"model.keras")`
and `WordPieceTokenizer(dir/"vocab.txt")` read it in plain Keras code, and `kbert.convert.read`
reads it like any other format.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

from kbert.convert.checkpoint import Checkpoint
from kbert.convert.hugging_face import read_vocabulary

MODEL_FILE = "model.keras"


def is_kbert(path):
    return (Path(path) / MODEL_FILE).is_file()


def read(path):
    from kbert.export import load_model

    path = Path(path)
    model = load_model(str(path / MODEL_FILE), compile=False)
    vocabulary, lowercase = None, True
    if (path / "vocab.txt").is_file():
        vocabulary = read_vocabulary(path / "vocab.txt")
    if (path / "tokenizer_config.json").is_file():
        with open(path / "tokenizer_config.json", encoding="utf-8") as f:
            lowercase = bool(json.load(f).get("do_lower_case", True))
    checkpoint = Checkpoint.from_model(model, vocabulary, lowercase)
    checkpoint.source = str(path)
    return checkpoint


def write(checkpoint, path, head="auto"):
    """Builds the kbert model of `checkpoint` (with `head`) and saves the directory."""
    path = Path(path)
    if path.exists() and any(path.iterdir()):
        raise FileExistsError(f"{path} exists and is not empty; choose a new --output.")
    model = checkpoint.build(head=head)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        model.save(str(staging / MODEL_FILE))
        if checkpoint.vocabulary is not None:
            with open(staging / "vocab.txt", "w", encoding="utf-8") as f:
                f.write("".join(f"{token}\n" for token in checkpoint.vocabulary))
            with open(staging / "tokenizer_config.json", "w", encoding="utf-8") as f:
                json.dump({"do_lower_case": checkpoint.lowercase}, f, indent=2)
        if path.exists():
            path.rmdir()
        os.replace(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return path
