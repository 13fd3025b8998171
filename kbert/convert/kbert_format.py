"""kbert's own directory: model.keras (architecture + weights) + vocab.txt (or ALBERT's
spiece.model) + tokenizer_config.json.

`tools/convert_checkpoint.py --to=kbert` writes it; `kbert.export.load_model(dir/"model.keras")`
and `WordPieceTokenizer(dir/"vocab.txt")` read it in plain Keras code, and `kbert.convert.read`
reads it like any other format.
"""

from pathlib import Path

from kbert.convert import _directory
from kbert.convert.checkpoint import Checkpoint
from kbert.convert.keras_archive import load_model

MODEL_FILE = "model.keras"


def is_kbert(path):
    return (Path(path) / MODEL_FILE).is_file()


def read(path):
    path = Path(path)
    model = load_model(str(path / MODEL_FILE), compile=False)
    vocabulary, lowercase = _directory.read_tokenizer_files(path)
    checkpoint = Checkpoint.from_model(model, vocabulary, lowercase is not False)
    checkpoint.source = str(path)
    checkpoint.sentencepiece_model = _directory.read_sentencepiece(path)
    return checkpoint


def write(checkpoint, path, head="auto"):
    """Builds the kbert model of `checkpoint` (with `head`; "auto" on a fine-tuned checkpoint:
    its task model) and saves the directory."""
    if checkpoint.task is not None and head == "auto":
        model = checkpoint.build_task()
    else:
        model = checkpoint.build(head=head)
    with _directory.staged(path) as staging:
        model.save(str(staging / MODEL_FILE))
        _directory.write_tokenizer_files(staging, checkpoint)
    return Path(path)
