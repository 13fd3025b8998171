"""What every checkpoint directory kbert writes or reads shares: an all-or-nothing write, and
the tokenizer files (vocab.txt, spiece.model or vocab.json + merges.txt, and
tokenizer_config.json)."""

import contextlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

from kbert.convert._checks import CheckpointError, check_vocabulary, read_json

TOKENIZER_CONFIG = "tokenizer_config.json"
TOKENIZER_JSON = "tokenizer.json"  # Hugging Face's tokenizers' file (ModernBERT, mmBERT)
SENTENCEPIECE_MODEL = "spiece.model"  # ALBERT's tokenizer, under Hugging Face's file name
BYTE_PAIR_FILES = ("vocab.json", "merges.txt")  # RoBERTa's (GPT-2's) byte-level BPE


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


def write_tokenizer_files(folder, checkpoint, sentencepiece_file=SENTENCEPIECE_MODEL,
                          **tokenizer_config):
    """vocab.txt (or the SentencePiece model as `sentencepiece_file`, or vocab.json +
    merges.txt) and tokenizer_config.json (`do_lower_case` + `tokenizer_config`), when the
    checkpoint has a tokenizer. A byte-level BPE does not lower-case: its
    tokenizer_config.json has no `do_lower_case`. A tokenizer.json is written back as read."""
    if checkpoint.tokenizer_json is not None:
        text, settings = checkpoint.tokenizer_json
        (Path(folder) / TOKENIZER_JSON).write_text(text, encoding="utf-8")
        # The family's tokenizer class names its vocab.txt / merges kind (ModernBERT's is
        # BertTokenizer for a WordPiece vocabulary); a tokenizer.json keeps the class it came
        # with, else the fast tokenizer every tokenizer.json loads into.
        tokenizer_config = {key: value for key, value in tokenizer_config.items()
                            if key != "tokenizer_class"}
        tokenizer_config["tokenizer_class"] = settings.get("tokenizer_class",
                                                           "PreTrainedTokenizerFast")
        with open(Path(folder) / TOKENIZER_CONFIG, "w", encoding="utf-8") as f:
            json.dump({**settings, **tokenizer_config}, f, indent=2)
        return
    if checkpoint.sentencepiece_model is None and checkpoint.vocabulary is None:
        return
    if checkpoint.merges is not None:
        from kbert.tokenizers.vocab_learning import write_byte_pair_files

        write_byte_pair_files(checkpoint.vocabulary, checkpoint.merges, str(folder))
        with open(Path(folder) / TOKENIZER_CONFIG, "w", encoding="utf-8") as f:
            json.dump(tokenizer_config, f, indent=2)
        return
    if checkpoint.sentencepiece_model is not None:
        (Path(folder) / sentencepiece_file).write_bytes(checkpoint.sentencepiece_model)
    if checkpoint.vocabulary is not None:
        from kbert.tokenizers.vocab_learning import write_vocabulary

        write_vocabulary(checkpoint.vocabulary, str(Path(folder) / "vocab.txt"))
    with open(Path(folder) / TOKENIZER_CONFIG, "w", encoding="utf-8") as f:
        json.dump({"do_lower_case": checkpoint.lowercase, **tokenizer_config}, f, indent=2)


def read_sentencepiece(folder, file_name=SENTENCEPIECE_MODEL):
    """The bytes of the folder's SentencePiece model (`file_name`), or `None`."""
    path = Path(folder) / file_name
    return read_bytes(path) if path.is_file() else None


def read_bytes(path):
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise CheckpointError(f"{path}: cannot read it ({error.strerror or error}).") from None


def read_byte_pair(folder):
    """(vocabulary, merges) of the folder's vocab.json + merges.txt, or (None, None).
    CheckpointError naming the file when vocab.json is not {token: id} with each token once
    and the ids 0..n-1 each once, or when a line of merges.txt is not a pair of tokens."""
    folder = Path(folder)
    if not all((folder / name).is_file() for name in BYTE_PAIR_FILES):
        return None, None
    vocab_file, merges_file = (folder / name for name in BYTE_PAIR_FILES)
    expected = "a JSON object {token: id} (a byte-level BPE's vocab.json)"
    ids = read_json(vocab_file, expected, unique_keys=True)
    tokens = [None] * len(ids)
    for token, i in ids.items():
        if type(i) is not int or not 0 <= i < len(ids):
            raise CheckpointError(f"{vocab_file}: {token!r} has the id {i!r}; expected ids "
                                  f"0..{len(ids) - 1}, one per token.")
        if tokens[i] is not None:
            raise CheckpointError(f"{vocab_file}: {tokens[i]!r} and {token!r} both have the "
                                  f"id {i}; each id has one token.")
        tokens[i] = token
    text = read_bytes(merges_file)
    try:
        lines = text.decode("utf-8").split("\n")
    except UnicodeDecodeError as error:
        raise CheckpointError(f"{merges_file} is not UTF-8 text ({error.reason} at byte "
                              f"{error.start}); expected one merge (two tokens) per line.") \
            from None
    from kbert.tokenizers.bpe.tokenizer import merge_pairs

    try:
        return tokens, merge_pairs(lines, str(merges_file))
    except ValueError as error:
        raise CheckpointError(str(error)) from None


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


def read_tokenizer_json(folder, vocabulary_size, config_source):
    """(tokenizer.json's text, tokenizer_config.json's fields) of `folder`, or None without a
    tokenizer.json. CheckpointError when its ids do not fit the model's `vocabulary_size`; one
    kbert does not read (a WordPiece one, ...) is logged, and `Checkpoint.tokenizer` raises
    `kbert.tokenizers`' ValueError (what was found, what is read)."""
    file = Path(folder) / TOKENIZER_JSON
    if not file.is_file():
        return None
    from kbert.tokenizers import tokenizer_from_json

    try:
        text = read_bytes(file).decode("utf-8")
    except UnicodeDecodeError as error:
        raise CheckpointError(f"{file} is not UTF-8 text ({error.reason}).") from None
    settings = {}
    if (Path(folder) / TOKENIZER_CONFIG).is_file():
        settings = read_json(Path(folder) / TOKENIZER_CONFIG)
    try:
        size = tokenizer_from_json(text, settings, source=str(file)).vocabulary_size
    except ValueError as error:  # the weights still load; `Checkpoint.tokenizer` says why not
        logging.warning("%s", error)
        return text, settings
    if size > vocabulary_size:
        raise CheckpointError(f"{file} has {size} tokens; the model ({config_source}) has "
                              f"{vocabulary_size} rows: not this model's tokenizer.")
    return text, settings


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


def check_tokenizer(folder, vocabulary, sentencepiece, vocabulary_size, config_source,
                    merges=None, family=None):
    """Refuses a vocab.txt, SentencePiece model or vocab.json + merges.txt (`merges` given)
    in `folder` that is not the model's: another token count than `vocabulary_size` (at most
    it, for a `family` whose table has spare rows), a special token missing, a token twice;
    a merge whose tokens (or their join) vocab.json lacks. `family` (a `FamilyFormat` record) names
    the SentencePiece model's file and its tokenizer's specials and added tokens."""
    from kbert.tokenizers import SPECIAL_TOKENS
    from kbert.tokenizers.sentencepiece.tokenizer import SPECIAL_PIECES

    folder = Path(folder)
    if merges is not None:
        from kbert.tokenizers.bpe.tokenizer import SPECIAL_TOKENS as BYTE_PAIR_SPECIALS

        vocab_file, merges_file = (folder / name for name in BYTE_PAIR_FILES)
        check_vocabulary(vocabulary, vocabulary_size, list(BYTE_PAIR_SPECIALS.values()),
                         vocab_file, config_source)
        known = set(vocabulary)
        for rank, (left, right) in enumerate(merges):
            missing = [t for t in (left, right, left + right) if t not in known]
            if missing:
                raise CheckpointError(f"{merges_file}: merge {rank} ({left!r} {right!r}) "
                                      f"names {missing[0]!r}, which {vocab_file} lacks; the "
                                      "merges are not this vocabulary's.")
    elif vocabulary is not None:
        check_vocabulary(vocabulary, vocabulary_size, list(SPECIAL_TOKENS.values()),
                         folder / "vocab.txt", config_source)
    if sentencepiece is not None:
        arguments = family.sentencepiece_arguments if family is not None else {}
        source = _sentencepiece_file(folder, family.sentencepiece_file if family is not None
                                     else SENTENCEPIECE_MODEL)
        pieces = sentencepiece_pieces(sentencepiece, source)
        pieces += [p for p in arguments.get("added_pieces", ()) if p not in pieces]
        specials = arguments.get("special_pieces", SPECIAL_PIECES)
        check_vocabulary(pieces, vocabulary_size, list(specials.values()), source,
                         config_source, spare_rows=family is not None
                         and family.spare_vocabulary_rows)


def _sentencepiece_file(folder, name=SENTENCEPIECE_MODEL):
    if (folder / name).is_file():
        return folder / name
    models = sorted(folder.glob("*.model"))  # the TF1 ALBERT releases' 30k-clean.model
    return models[0] if len(models) == 1 else folder / SENTENCEPIECE_MODEL
