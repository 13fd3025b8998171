"""kbert's own directory: model.keras (architecture + weights) + vocab.txt (or ALBERT's
spiece.model, or RoBERTa's vocab.json + merges.txt) + tokenizer_config.json.

`tools/convert_checkpoint.py --to=kbert` writes it; `kbert.untrusted.load_model(dir/"model.keras")`
and `WordPieceTokenizer(dir/"vocab.txt")` read it in plain Keras code, and `kbert.convert.read`
reads it like any other format.
"""

import types
from pathlib import Path

from kbert.convert import _directory
from kbert.convert.checkpoint import Checkpoint
from kbert.convert._checks import CheckpointError, check_sizes
from kbert.untrusted.keras_archive import archive_config, load_model

MODEL_FILE = "model.keras"


def is_kbert(path):
    return (Path(path) / MODEL_FILE).is_file()


_SIZES = ("vocabulary_size", "num_layers", "hidden_size", "intermediate_size",
          "max_sequence_length")


def _check_sizes(node, source):
    """Refuses, before Keras builds anything, a backbone config in the archive whose sizes no
    real model has (`kbert.convert._checks.check_sizes`)."""
    if isinstance(node, list):
        for item in node:
            _check_sizes(item, source)
    elif isinstance(node, dict):
        if all(key in node for key in _SIZES):
            values = {k: node.get(k) for k in (*_SIZES, "type_vocab_size", "embedding_size",
                                               "num_groups")}
            wrong = [k for k, v in values.items() if v is not None and (
                not isinstance(v, int) or isinstance(v, bool) or v < 0)]
            if wrong:
                raise CheckpointError(f"{source}: {wrong[0]}={values[wrong[0]]!r}; expected a "
                                      "non-negative integer.")
            check_sizes(types.SimpleNamespace(**values), source)
        for value in node.values():
            _check_sizes(value, source)


def read(path):
    path = Path(path)
    _check_sizes(archive_config(str(path / MODEL_FILE)), str(path / MODEL_FILE))
    model = load_model(str(path / MODEL_FILE), compile=False)
    if getattr(model, "exit_heads", None):  # a --exit_heads run: the checkpoint's model is
        model = model.without_exits()       # its classifier (the exits are model.keras')
    vocabulary, lowercase = _directory.read_tokenizer_files(path)
    merges = None
    if vocabulary is None:
        vocabulary, merges = _directory.read_byte_pair(path)
    checkpoint = Checkpoint.from_model(model, vocabulary, lowercase is not False)
    checkpoint.source = str(path)
    if merges is not None:
        checkpoint.merges, checkpoint.lowercase = merges, False
    checkpoint.sentencepiece_model = _directory.read_sentencepiece(path)
    if vocabulary is None and checkpoint.sentencepiece_model is None:
        checkpoint.tokenizer_json = _directory.read_tokenizer_json(
            path, checkpoint.config.vocabulary_size, str(path / MODEL_FILE))
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
