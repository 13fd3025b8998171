"""What every checkpoint directory kbert writes or reads shares: an all-or-nothing write, and
the tokenizer files (vocab.txt + tokenizer_config.json)."""

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

TOKENIZER_CONFIG = "tokenizer_config.json"
SENTENCEPIECE_MODEL = "spiece.model"  # ALBERT's tokenizer, under Hugging Face's file name


@contextlib.contextmanager
def staged(path):
    """Yields a new folder next to `path`; renames it to `path` when the block succeeds and
    deletes it when the block fails, so a crash leaves no half-written directory."""
    path = Path(path)
    if path.exists() and any(path.iterdir()):
        raise FileExistsError(f"{path} exists and is not empty; choose a new --output.")
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        yield staging
        if path.exists():
            path.rmdir()
        os.replace(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_tokenizer_files(folder, checkpoint, **tokenizer_config):
    """vocab.txt (or spiece.model) and tokenizer_config.json (`do_lower_case` +
    `tokenizer_config`), when the checkpoint has a tokenizer."""
    if checkpoint.sentencepiece_model is None and checkpoint.vocabulary is None:
        return
    if checkpoint.sentencepiece_model is not None:
        (Path(folder) / SENTENCEPIECE_MODEL).write_bytes(checkpoint.sentencepiece_model)
    if checkpoint.vocabulary is not None:
        from kbert.tokenizers.vocab_learning import write_vocabulary

        write_vocabulary(checkpoint.vocabulary, str(Path(folder) / "vocab.txt"))
    with open(Path(folder) / TOKENIZER_CONFIG, "w", encoding="utf-8") as f:
        json.dump({"do_lower_case": checkpoint.lowercase, **tokenizer_config}, f, indent=2)


def read_sentencepiece(folder):
    """The bytes of the folder's spiece.model, or `None`."""
    path = Path(folder) / SENTENCEPIECE_MODEL
    return path.read_bytes() if path.is_file() else None


def read_tokenizer_files(folder):
    """(vocabulary or None, do_lower_case or None) from a checkpoint directory."""
    folder = Path(folder)
    vocabulary = lowercase = None
    if (folder / "vocab.txt").is_file():
        from kbert.tokenizers import read_vocabulary

        vocabulary = read_vocabulary(str(folder / "vocab.txt"))
    if (folder / TOKENIZER_CONFIG).is_file():
        with open(folder / TOKENIZER_CONFIG, encoding="utf-8") as f:
            lowercase = json.load(f).get("do_lower_case")
    return vocabulary, lowercase
