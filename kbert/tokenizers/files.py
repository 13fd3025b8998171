"""Writing a tokenizer's files: a WordPiece vocab.txt, a SentencePiece model, a byte-level
BPE's vocab.json and merges.txt (`kbert.tokenizers.vocab_learning` learns them; each
tokenizer's `write_files` writes its own), and the settings its files do not say in a
tokenizer_config.json, as Hugging Face's checkpoints state them."""

import json
import os

import tensorflow as tf

MERGES_FILE = "merges.txt"  # a byte-level BPE's merges, beside its vocab.json
SETTINGS_FILE = "tokenizer_config.json"  # settings beside the vocabulary (Hugging Face's name)


def write_settings(settings, folder):
    """Adds `settings` ({field: value}) to `folder`'s tokenizer_config.json (made when it
    has none); returns its path."""
    tf.io.gfile.makedirs(folder)
    path = os.path.join(folder, SETTINGS_FILE)
    written = {}
    if tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path, "r") as f:
            written = json.load(f)
    with tf.io.gfile.GFile(path, "w") as f:
        json.dump({**written, **settings}, f, indent=2)
    return path


def read_settings(folder):
    """`folder`'s tokenizer_config.json as a dict ({} when it has none)."""
    path = os.path.join(folder, SETTINGS_FILE)
    if not tf.io.gfile.exists(path):
        return {}
    with tf.io.gfile.GFile(path, "r") as f:
        try:
            settings = json.load(f)
        except ValueError as e:
            raise ValueError(f"{path} is not JSON: {e}") from None
    if not isinstance(settings, dict):
        raise ValueError(f"{path} holds a {type(settings).__name__}, not a JSON object of "
                         "settings.")
    return settings


def write_sentence_piece_model(model, path):
    """Writes a serialized SentencePiece model (bytes) as a .model file."""
    folder = os.path.dirname(path)
    if folder:
        tf.io.gfile.makedirs(folder)
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(model)


def write_vocabulary(vocabulary, path):
    """Writes one token per line (the line number is the id)."""
    folder = os.path.dirname(path)
    if folder:
        tf.io.gfile.makedirs(folder)
    with tf.io.gfile.GFile(path, "w") as f:
        f.write("".join(token + "\n" for token in vocabulary))


def write_byte_pair_files(vocabulary, merges, folder, vocab_name="vocab.json"):
    """Writes vocab.json ({token: id}, or `vocab_name`) and merges.txt (GPT-2's "#version"
    line, then one pair a line) into `folder`; returns their paths. The merges go first: a
    run that finds the vocab.json takes the vocabulary as written (and learns none), so a
    run killed between the two files must leave no vocab.json."""
    tf.io.gfile.makedirs(folder)
    vocab_path = os.path.join(folder, vocab_name)
    merges_path = os.path.join(folder, MERGES_FILE)
    with tf.io.gfile.GFile(merges_path, "w") as f:
        f.write("#version: 0.2\n" + "".join(f"{left} {right}\n" for left, right in merges))
    with tf.io.gfile.GFile(vocab_path, "w") as f:
        json.dump({token: i for i, token in enumerate(vocabulary)}, f, ensure_ascii=False)
    return vocab_path, merges_path


def write_tokenizer_files(tokenizer, directory, max_length=None):
    """The tokenizer's vocab.txt (WordPiece), spiece.model (SentencePiece), vocab.json and
    merges.txt (byte-level BPE) or tokenizer.json in `directory`; with `max_length`, the
    model's longest input in tokens as tokenizer_config.json's `model_max_length` (Hugging
    Face's field), what a reader of the directory truncates to. A pair layout other than
    the kind's goes there too, as `pair_layout` ([separators, second_segment]), which
    `kbert.tokenizers.tokenizer_types.load` passes back."""
    tokenizer.write_files(directory)
    settings = {} if max_length is None else {"model_max_length": int(max_length)}
    layout = getattr(tokenizer, "layout", None)
    if layout is not None and tuple(layout) != tuple(type(tokenizer).layout):
        settings["pair_layout"] = list(layout)
    if settings:
        write_settings(settings, directory)
