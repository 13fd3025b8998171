"""A tokenizer as a folder and a settings record: what a Keras layer that carries a tokenizer
(a task's preprocessor) writes into a `.keras` archive's assets and reads back, with no code
of its own in the archive (Keras' safe mode).

`settings(tokenizer)` is a JSON-able dict (its kind and every setting its files do not say);
`write(tokenizer, folder)` writes its files (`Tokenizer.write_files`); `read(settings,
folder)` makes it again: the same ids for the same text.
"""

import os

import tensorflow as tf

from kbert.tokenizers.bpe import BytePairTokenizer
from kbert.tokenizers.sentencepiece import SentencePieceTokenizer
from kbert.tokenizers.tokenizer_json import JsonTokenizer, load_tokenizer_json
from kbert.tokenizers.wordpiece import WordPieceTokenizer

_SPECIALS = ("cls", "sep", "pad", "unk", "mask")


def _specials(tokenizer):
    return {key: tokenizer.vocabulary[getattr(tokenizer, f"{key}_id")] for key in _SPECIALS}


def settings(tokenizer):
    """{"kind": ..., setting: value}: what `read` needs beside the files (the pair layout
    too: a (separators, second_segment) list)."""
    common = {"split_special_tokens": bool(tokenizer.split_special_tokens),
              "pair_layout": list(tokenizer.layout)}
    if isinstance(tokenizer, JsonTokenizer):  # before BytePairTokenizer: a subclass of it
        return {"kind": "tokenizer_json", **common}
    if isinstance(tokenizer, BytePairTokenizer):
        return {"kind": "bpe", **common, "add_prefix_space": tokenizer.add_prefix_space,
                "special_tokens": _specials(tokenizer), "lstrip_mask": tokenizer.lstrip_mask,
                "lowercase": tokenizer.lowercase}
    if isinstance(tokenizer, SentencePieceTokenizer):
        return {"kind": "sentencepiece", **common, "lowercase": tokenizer.lowercase,
                "keep_accents": tokenizer.keep_accents,
                "special_pieces": dict(tokenizer.special_pieces),
                "added_pieces": list(tokenizer.added_pieces),
                "albert_preprocess": tokenizer.albert_preprocess}
    if isinstance(tokenizer, WordPieceTokenizer):
        return {"kind": "wordpiece", **common, "lowercase": tokenizer.lowercase,
                "max_chars_per_word": tokenizer.max_chars_per_word}
    raise TypeError(f"A {type(tokenizer).__name__} cannot be saved with a model: expected a "
                    "kbert tokenizer (WordPieceTokenizer, SentencePieceTokenizer, "
                    "BytePairTokenizer or a tokenizer.json tokenizer).")


def write(tokenizer, folder):
    """Writes the tokenizer's files into `folder` (made when missing)."""
    settings(tokenizer)  # a TypeError before anything is written for an unknown kind
    tf.io.gfile.makedirs(folder)
    tokenizer.write_files(folder)


def read(given, folder):
    """The tokenizer that `write` wrote into `folder`, with its `settings` `given`."""
    given = dict(given)
    kind = given.pop("kind", None)
    path = lambda name: os.path.join(folder, name)  # noqa: E731
    if kind == "wordpiece":
        return WordPieceTokenizer(path("vocab.txt"), **given)
    if kind == "sentencepiece":
        return SentencePieceTokenizer(path("spiece.model"), **given)
    if kind == "bpe":
        return BytePairTokenizer(path("vocab.json"), path("merges.txt"), **given)
    if kind == "tokenizer_json":
        return load_tokenizer_json(folder, **given)
    raise ValueError(f"Unknown tokenizer kind {kind!r} in a saved model's settings. Allowed: "
                     "wordpiece, sentencepiece, bpe, tokenizer_json.")
