"""The kinds of tokenizer that a vocabulary file holds, by name: what tools/build_vocab.py
--type learns and tools/pretrain.py --tokenizer_type reads.

Each kind says how its vocabulary is learned from documents, written, recognised by its file
name and loaded as a kbert tokenizer. A kind added here (byte-level BPE) is at once a choice
of both programs.
"""

import dataclasses
import os
from typing import Callable

from kbert.tokenizers import vocab_learning
from kbert.tokenizers.sentence_piece_tokenizer import SentencePieceTokenizer
from kbert.tokenizers.word_piece_tokenizer import WordPieceTokenizer


@dataclasses.dataclass(frozen=True)
class TokenizerType:
    name: str
    description: str
    file_name: str  # the file's name in a run's model_dir
    extensions: tuple  # a vocabulary file ending so is of this kind
    learn: Callable  # (documents, vocab_size, lowercase, max_sentences) -> vocabulary
    write: Callable  # (vocabulary, path)
    load: Callable  # (path, lowercase) -> tokenizer


def _load_word_piece(path, lowercase):
    return WordPieceTokenizer(path, lowercase=lowercase)


def _load_sentence_piece(path, lowercase):
    return SentencePieceTokenizer(path, lowercase=lowercase)


TOKENIZER_TYPES = {
    "wordpiece": TokenizerType(
        "wordpiece", "WordPiece vocab.txt (BERT, DistilBERT, ELECTRA), learned with "
        "tensorflow-text", "vocab.txt", (".txt",), vocab_learning.learn_vocabulary,
        vocab_learning.write_vocabulary, _load_word_piece),
    "sentencepiece": TokenizerType(
        "sentencepiece", "SentencePiece unigram model (ALBERT), learned with the "
        "sentencepiece package", "spiece.model", (".model",),
        vocab_learning.learn_sentence_piece_model, vocab_learning.write_sentence_piece_model,
        _load_sentence_piece),
}


def get(name):
    """The `TokenizerType` called `name`; a ValueError naming the allowed ones otherwise."""
    if name not in TOKENIZER_TYPES:
        raise ValueError(f"Unknown tokenizer type {name!r}. Allowed: "
                         f"{', '.join(TOKENIZER_TYPES)}.")
    return TOKENIZER_TYPES[name]


def type_of_file(path):
    """The name of the kind whose extension `path` has (spiece.model: "sentencepiece");
    "wordpiece" for any other name, as a vocab.txt may be called anything."""
    name = os.fspath(path).lower()
    for kind in TOKENIZER_TYPES.values():
        if name.endswith(kind.extensions):
            return kind.name
    return "wordpiece"


def learn(name, documents, path, vocab_size, lowercase=True, max_sentences=None):
    """Learns a vocabulary of kind `name` from `documents` and writes it to `path`; returns
    the vocabulary as the kind's learner gives it (a token list, or a model's bytes)."""
    kind = get(name)
    vocabulary = kind.learn(documents, vocab_size, lowercase=lowercase,
                            max_sentences=max_sentences)
    kind.write(vocabulary, path)
    return vocabulary


def load(path, name=None, lowercase=True):
    """The kbert tokenizer of the vocabulary file at `path`, of kind `name` (default: the
    kind its extension says, see `type_of_file`)."""
    return get(name or type_of_file(path)).load(os.fspath(path), lowercase)
