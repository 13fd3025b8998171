"""What every checkpoint directory kbert writes or reads shares: an all-or-nothing write, and
the tokenizer files (vocab.txt + tokenizer_config.json)."""

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from kbert.convert._checks import CheckpointError, check_vocabulary, read_json

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
    return read_bytes(path) if path.is_file() else None


def read_bytes(path):
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise CheckpointError(f"{path}: cannot read it ({error.strerror or error}).") from None


def read_tokenizer_files(folder):
    """(vocabulary or None, do_lower_case or None) from a checkpoint directory."""
    folder = Path(folder)
    vocabulary = lowercase = None
    if (folder / "vocab.txt").is_file():
        from kbert.tokenizers import read_vocabulary

        try:
            vocabulary = read_vocabulary(str(folder / "vocab.txt"))
        except UnicodeDecodeError as error:
            raise CheckpointError(f"{folder / 'vocab.txt'} is not UTF-8 text ({error.reason} "
                                  f"at byte {error.start}); expected one token per line.") \
                from None
    if (folder / TOKENIZER_CONFIG).is_file():
        lowercase = read_json(folder / TOKENIZER_CONFIG).get("do_lower_case")
    return vocabulary, lowercase


def sentencepiece_pieces(model, source):
    """The pieces (index = id) of a serialized SentencePiece model; CheckpointError naming
    `source` when it is not one."""
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(model)
    except Exception as error:  # RuntimeError, or a protobuf DecodeError
        raise CheckpointError(f"{source} is not a SentencePiece model ({error}).") from None
    return [processor.IdToPiece(i) for i in range(processor.GetPieceSize())]


def check_tokenizer(folder, vocabulary, sentencepiece, vocabulary_size, config_source):
    """Refuses a vocab.txt or spiece.model in `folder` that is not the model's: another token
    count than `vocabulary_size`, a special token missing, a token twice."""
    from kbert.tokenizers import SPECIAL_TOKENS
    from kbert.tokenizers.sentence_piece_tokenizer import SPECIAL_PIECES

    folder = Path(folder)
    if vocabulary is not None:
        check_vocabulary(vocabulary, vocabulary_size, list(SPECIAL_TOKENS.values()),
                         folder / "vocab.txt", config_source)
    if sentencepiece is not None:
        source = _sentencepiece_file(folder)
        check_vocabulary(sentencepiece_pieces(sentencepiece, source), vocabulary_size,
                         list(SPECIAL_PIECES.values()), source, config_source)


def _sentencepiece_file(folder):
    if (folder / SENTENCEPIECE_MODEL).is_file():
        return folder / SENTENCEPIECE_MODEL
    models = sorted(folder.glob("*.model"))  # the TF1 ALBERT releases' 30k-clean.model
    return models[0] if len(models) == 1 else folder / SENTENCEPIECE_MODEL
