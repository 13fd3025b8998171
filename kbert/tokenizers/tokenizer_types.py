"""The kinds of tokenizer that a vocabulary file holds, by name: what tools/build_vocab.py
--type learns and tools/pretrain.py --tokenizer_type reads.

Each kind says how its vocabulary is learned from documents, written, recognised by its file
name and loaded as a kbert tokenizer. A kind added here is at once a choice of both programs.

A byte-level BPE is two files: the path names its vocab.json (any name ending in .json) and
its merges are merges.txt in the same folder (Hugging Face's layout, as RoBERTa's checkpoint
directory has them). Its tokenizer puts a space before every text (`add_prefix_space`): the
pretraining pipeline tokenizes a corpus sentence by sentence and packs the sentences into one
sequence, so each sentence's first word is then tokenized as in running text ("Ġthe", not
"the") and every word starts at a "Ġ" token, as every SentencePiece word at a "▁" piece.
"""

import dataclasses
import os
from typing import Callable

import tensorflow as tf

from kbert.tokenizers import vocab_learning
from kbert.tokenizers.bpe import BytePairTokenizer
from kbert.tokenizers.packing import PairLayout
from kbert.tokenizers.sentencepiece import SentencePieceTokenizer
from kbert.tokenizers.wordpiece import WordPieceTokenizer


@dataclasses.dataclass(frozen=True)
class TokenizerType:
    name: str
    description: str
    file_name: str  # the file's name in a run's model_dir (bpe: merges.txt goes beside it)
    extensions: tuple  # a vocabulary file ending so is of this kind
    learn: Callable  # (documents, vocab_size, lowercase, max_sentences) -> vocabulary
    write: Callable  # (vocabulary, path)
    load: Callable  # (path, lowercase, **settings) -> tokenizer
    # (path) -> the other files of the vocabulary at path (bpe: its merges.txt)
    other_files: Callable = lambda path: []
    # Whether the tools lower-case for this kind when not told (--lowercase unset): the
    # models that use it (BERT's and ALBERT's uncased releases; RoBERTa's BPE is cased).
    lowercase: bool = True
    # (path) -> raises a ValueError when the kind is not written under that name
    check_path: Callable = lambda path: None
    # How its tokenizer packs a pair by default (the kind's `layout`).
    pair_layout: PairLayout = WordPieceTokenizer.layout
    # The fields of a tokenizer_config.json that `load` passes on to it as keywords (and
    # `pair_layout`, which every kind takes: `kbert.tokenizers.files.write_tokenizer_files`).
    settings: tuple = ()


def _load_word_piece(path, lowercase, **settings):
    return WordPieceTokenizer(path, lowercase=lowercase, **settings)


def _load_sentence_piece(path, lowercase, **settings):
    return SentencePieceTokenizer(path, lowercase=lowercase, **settings)


def merges_path(path):
    """The merges.txt of the byte-level BPE whose vocab.json is `path`: in the same folder."""
    return os.path.join(os.path.dirname(os.fspath(path)), vocab_learning.MERGES_FILE)


def _check_json_name(path):
    if not os.fspath(path).lower().endswith(".json"):
        raise ValueError(f"A byte-level BPE vocabulary is a vocab.json (with merges.txt beside "
                         f"it): the path must end in .json, got {os.fspath(path)!r}.")


def _learn_byte_pair(documents, vocab_size, lowercase, max_sentences):
    return vocab_learning.learn_byte_pair_vocabulary(
        documents, vocab_size, add_prefix_space=True, lowercase=lowercase,
        max_sentences=max_sentences)


def _write_byte_pair(learned, path):
    vocabulary, merges = learned
    folder, name = os.path.split(os.fspath(path))
    vocab_learning.write_byte_pair_files(vocabulary, merges, folder or ".", name)


def _load_byte_pair(path, lowercase, add_prefix_space=True, **settings):
    merges = merges_path(path)
    if not tf.io.gfile.exists(merges):
        raise ValueError(f"{os.fspath(path)!r} is a byte-level BPE vocabulary without its "
                         f"merges: {merges!r} does not exist (merges.txt goes beside the "
                         "vocab.json).")
    return BytePairTokenizer(path, merges, add_prefix_space=add_prefix_space,
                             lowercase=lowercase, **settings)


TOKENIZER_TYPES = {
    "wordpiece": TokenizerType(
        "wordpiece", "WordPiece vocab.txt (BERT, DistilBERT, ELECTRA), learned with "
        "tensorflow-text", "vocab.txt", (".txt",), vocab_learning.learn_vocabulary,
        vocab_learning.write_vocabulary, _load_word_piece),
    "sentencepiece": TokenizerType(
        "sentencepiece", "SentencePiece unigram model (ALBERT), learned with the "
        "sentencepiece package", "spiece.model", (".model",),
        vocab_learning.learn_sentence_piece_model, vocab_learning.write_sentence_piece_model,
        _load_sentence_piece, settings=("special_pieces", "added_pieces", "albert_preprocess",
                                        "keep_accents")),
    "bpe": TokenizerType(
        "bpe", "byte-level BPE vocab.json + merges.txt beside it (RoBERTa), learned with the "
        "tokenizers package", "vocab.json", (".json",), _learn_byte_pair, _write_byte_pair,
        _load_byte_pair, other_files=lambda path: [merges_path(path)],
        check_path=_check_json_name, lowercase=False,
        pair_layout=BytePairTokenizer.layout, settings=("add_prefix_space",)),
}


def get(name):
    """The `TokenizerType` called `name`; a ValueError naming the allowed ones otherwise."""
    if name not in TOKENIZER_TYPES:
        raise ValueError(f"Unknown tokenizer type {name!r}. Allowed: "
                         f"{', '.join(TOKENIZER_TYPES)}.")
    return TOKENIZER_TYPES[name]


def type_of_file(path):
    """The name of the kind whose extension `path` has (spiece.model: "sentencepiece",
    vocab.json: "bpe"); "wordpiece" for any other name, as a vocab.txt may be called
    anything."""
    name = os.fspath(path).lower()
    for kind in TOKENIZER_TYPES.values():
        if name.endswith(kind.extensions):
            return kind.name
    return "wordpiece"


def type_of_folder(folder):
    """The kind of the tokenizer files in `folder` (a run's model_dir or a checkpoint
    directory): "bpe" for vocab.json with merges.txt, "sentencepiece" for a *.model without
    a vocab.txt, else "wordpiece" (also when `folder` holds none)."""
    names = set(tf.io.gfile.listdir(folder)) if tf.io.gfile.isdir(folder) else set()
    if "vocab.json" in names and "merges.txt" in names:
        return "bpe"
    if any(n.endswith(".model") for n in names) and "vocab.txt" not in names:
        return "sentencepiece"
    return "wordpiece"


def files(path, name=None):
    """The files that the vocabulary at `path` (of kind `name`, default: by its extension)
    consists of: `path`, and a byte-level BPE's merges.txt beside it."""
    return [os.fspath(path)] + get(name or type_of_file(path)).other_files(os.fspath(path))


def learn(name, documents, path, vocab_size, lowercase=True, max_sentences=None):
    """Learns a vocabulary of kind `name` from `documents` and writes it to `path`; returns
    the vocabulary as the kind's learner gives it (a token list, a model's bytes, or a
    byte-level BPE's (token list, merges))."""
    kind = get(name)
    kind.check_path(path)  # before the learning, which can take long
    vocabulary = kind.learn(documents, vocab_size, lowercase=lowercase,
                            max_sentences=max_sentences)
    kind.write(vocabulary, path)
    return vocabulary


def keras_hub_assets(tokenizer, lowercase):
    """(vocabulary, lowercase, sentencepiece_model, merges) of a keras-hub tokenizer, as
    `kbert.convert.Checkpoint` holds them: a byte-level BPE's (RoBERTa's, cased) token list
    and merges, a SentencePiece model's bytes (ALBERT, DeBERTa), or a WordPiece token list.
    `lowercase`: the family's, where the tokenizer does not say."""
    lowercase = bool(getattr(tokenizer, "lowercase", lowercase))
    if getattr(tokenizer, "merges", None) is not None:  # byte-level BPE: {token: id}
        vocabulary = sorted(tokenizer.vocabulary, key=tokenizer.vocabulary.get)
        return vocabulary, False, None, tokenizer.merges
    if getattr(tokenizer, "proto", None) is not None:  # SentencePiece
        model = tokenizer.proto
        if not isinstance(model, bytes):
            with tf.io.gfile.GFile(os.fspath(model), "rb") as f:
                model = f.read()
        return None, lowercase, model, None
    return list(tokenizer.get_vocabulary()), lowercase, None, None


def load(path, name=None, lowercase=True, settings=None, pair_layout=None):
    """The kbert tokenizer of the vocabulary file at `path`, of kind `name` (default: the
    kind its extension says, see `type_of_file`). `settings`: a tokenizer_config.json's
    fields (`BytePairTokenizer.write_files` writes one); the kind takes those it has (bpe:
    `add_prefix_space`, else True) and `pair_layout`. `pair_layout` (a family record's):
    how the tokenizer packs a pair, over the settings' and the kind's."""
    kind = get(name or type_of_file(path))
    kind.check_path(path)
    settings = dict(settings or {})
    if pair_layout is not None:
        settings["pair_layout"] = pair_layout
    given = {key: settings[key] for key in (*kind.settings, "pair_layout") if key in settings}
    return kind.load(os.fspath(path), lowercase, **given)


def load_written(path, name=None, lowercase=True):
    """The tokenizer whose files are at `path` (a run's vocabulary, learned or a teacher's
    written there by `kbert.tokenizers.files.write_tokenizer_files`, or a --vocab_file), with
    the settings of the tokenizer_config.json beside it: a SentencePiece model's special and
    added pieces and normalisation (DeBERTa-v3's are not ALBERT's), a pair layout. Not a
    byte-level BPE's `add_prefix_space`: a pretraining run's is always True (see above)."""
    from kbert.tokenizers.files import read_settings

    settings = read_settings(os.path.dirname(os.fspath(path)) or ".")
    settings.pop("add_prefix_space", None)
    return load(path, name, lowercase=lowercase, settings=settings)
