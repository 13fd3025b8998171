"""Token classification (NER, POS) data: sentences as words and tags in (CoNLL files,
TFDS's conll2003), labels on wordpieces for the model, predictions per word out.

Each word's label sits on its first wordpiece (`label_weights` 1 there, 0 on its other
pieces), as in the BERT paper; a prediction for a word is read from its first piece too.
Words are tokenized one by one (the tokenizer's `align_texts` / `align_words`), so a word
split into many pieces, a word the vocabulary does not know ([UNK]) and a word that gives no
piece at all keep their place. Sentences longer than the sequence lose their last words (counted in
`EncodedTagging.truncated_words`; those words get no prediction).

Every problem in the data raises `DataError` (a `ValueError`) naming the file, the line (or
the example) and what was expected; nothing is skipped silently.
"""

import dataclasses
import os
from typing import Optional

import numpy as np

from kbert.tasks.datasets import (
    LABEL_WEIGHTS,
    LABELS,
    DataError,
    TfdsTask,
    arrays_dataset,
    builder_rows,
    check_int,
    label_indices,
)
from kbert.tasks.datasets import text as _text  # TFDS bytes -> str
from kbert.tasks.token_classification.decode import decode_entities


@dataclasses.dataclass(frozen=True)
class TaggingExample:
    """A sentence as words; `tags` holds an index into `label_names` per word (or None)."""
    words: tuple
    tags: Optional[tuple] = None
    origin: str = ""


@dataclasses.dataclass
class TaggingData:
    examples: list
    label_names: Optional[list] = None
    source: str = ""


def read_conll(path, word_column=0, tag_column=-1, *, label_names=None, separator=None,
               encoding="utf-8"):
    """Reads a CoNLL column file: a word per line, a blank line between sentences.

    `-DOCSTART-` lines are skipped. Every line has the first word line's number of columns
    (fields split on `separator`, default any whitespace). `tag_column=None` reads words
    only. Tags become indices into `label_names` (default: the distinct tags, sorted).
    Returns `TaggingData`.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such file: {path!r}.")
    sentences, columns, first_line = [], None, None
    words, tags, start = [], [], None

    def close():
        nonlocal words, tags
        if words:
            sentences.append((words, tags, start))
        words, tags = [], []

    with open(path, encoding=encoding) as f:
        for number, line in enumerate(f, 1):
            fields = line.rstrip("\r\n").split(separator)
            if not line.strip() or fields[0] == "-DOCSTART-":
                close()
                continue
            if columns is None:
                columns, first_line = len(fields), number
                for column in (word_column, tag_column):
                    if column is not None and not -columns <= column < columns:
                        raise DataError(f"{path}: line {number} has {columns} columns; there "
                                        f"is no column {column}.")
            elif len(fields) != columns:
                raise DataError(f"{path}: line {number} has {len(fields)} columns; expected "
                                f"{columns} (as line {first_line}): {line.rstrip()!r}.")
            if not words:
                start = number
            words.append(fields[word_column])
            tags.append(None if tag_column is None else fields[tag_column].strip())
            if not words[-1].strip():
                raise DataError(f"{path}: line {number}: empty word in column {word_column}.")
    close()
    if not sentences:
        raise DataError(f"{path}: no sentences.")
    origins = [f"{path}: line {start}" for _, _, start in sentences]
    if tag_column is None:
        return TaggingData([TaggingExample(tuple(w), None, o)
                            for (w, _, _), o in zip(sentences, origins)], label_names, path)
    flat_origins = [f"{path}: line {start + i}" for _, t, start in sentences
                    for i in range(len(t))]
    flat, label_names, _ = label_indices([t for _, ts, _ in sentences for t in ts],
                                         flat_origins, label_names, regression=False)
    examples, position = [], 0
    for (w, _, _), origin in zip(sentences, origins):
        examples.append(TaggingExample(tuple(w), tuple(flat[position : position + len(w)]),
                                       origin))
        position += len(w)
    return TaggingData(examples, label_names, path)


# The TFDS builders of tagged sentences: their words and default tag sequence.
TFDS_TASKS = {"conll2003": TfdsTask("tagging", "tokens", None, "ner")}


def read_tfds(name="conll2003", split="train", data_dir=None, download=True,
              tag_feature=None):
    """Reads a tagging dataset from tensorflow-datasets (conll2003: tokens, and the tag
    sequence `tag_feature`: "ner" (default), "pos" or "chunks"); `data_dir` and `download`
    as `tfds.builder` / `download_and_prepare`. Tag names come from the builder's ClassLabel
    feature. Returns `TaggingData`."""
    if name not in TFDS_TASKS:
        raise ValueError(f"{name!r} is no TFDS tagging dataset; kbert reads "
                         f"{sorted(TFDS_TASKS)}.")
    task = TFDS_TASKS[name]
    if tag_feature is not None:
        task = task._replace(label=tag_feature)
    rows, features, where = builder_rows(name, task, split, data_dir, download)
    names = list(features[task.label].feature.names)
    return _sentences(rows, where, task.text_a, task.label, names)


def _sentences(rows, where, words_key, tags_key, names):
    examples = []
    for i, row in enumerate(rows):
        origin = f"{where} example {i}"
        words = tuple(_text(w) for w in row[words_key])
        tags = tuple(int(t) for t in row[tags_key])
        if len(words) != len(tags):
            raise DataError(f"{origin}: {len(words)} words but {len(tags)} tags.")
        if not words:
            continue
        for j, word in enumerate(words):
            if not word.strip():
                raise DataError(f"{origin}: word {j} is empty.")
        for j, tag in enumerate(tags):
            if not 0 <= tag < len(names):
                raise DataError(f"{origin}: tag {tag} of word {j} is outside the "
                                f"{len(names)} tags {names}.")
        examples.append(TaggingExample(words, tags, origin))
    if not examples:
        raise DataError(f"{where}: no sentences.")
    return TaggingData(examples, names, where)


@dataclasses.dataclass
class EncodedTagging:
    """Model inputs for tagging, and the alignment to read predictions back per word.

    Attributes:
        features: `token_ids`, `segment_ids`, `padding_mask`, int32 [N, S].
        labels: `labels` int32 [N, S], `label_weights` float32 [N, S]; None without tags.
        word_ids: int32 [N, S], the word index at each word's first piece, -1 elsewhere.
        alignments: per example, a `kbert.tokenizers.alignment.Alignment` (text, words with
            spans, pieces).
        label_names: the tag names (index = label id), if known.
        truncated_words: words cut off by `sequence_length`.
    """
    features: dict
    labels: Optional[dict]
    word_ids: np.ndarray
    alignments: list
    label_names: Optional[list] = None
    truncated_words: int = 0

    def word_predictions(self, predictions):
        """[N, S] tag ids or [N, S, tags] scores -> per example, a tag per word (the name
        when `label_names` is known), read at each word's first piece; None for a word
        with no piece in the sequence."""
        predictions = np.asarray(predictions)
        if predictions.ndim == 3:
            predictions = predictions.argmax(-1)
        if predictions.shape != self.word_ids.shape:
            raise ValueError(f"Expected predictions of shape {self.word_ids.shape} (+ tags), "
                             f"got {predictions.shape}.")
        out = []
        for row, word_ids, alignment in zip(predictions, self.word_ids, self.alignments):
            tags = [None] * len(alignment.words)
            for position in np.flatnonzero(word_ids >= 0):
                tag = int(row[position])
                tags[word_ids[position]] = self.label_names[tag] if self.label_names else tag
            out.append(tags)
        return out

    def entities(self, predictions, scheme="IOB2"):
        """Per example, the predicted entities (`Entity`) over the original text."""
        return [decode_entities(tags, alignment.words, scheme, alignment.text)
                for tags, alignment in zip(self.word_predictions(predictions),
                                           self.alignments)]


def encode_tagging(data, tokenizer, sequence_length=128):
    """Words (and tags) -> `EncodedTagging`.

    Args:
        data: `TaggingData` (`read_conll`, `read_tfds("conll2003")`), a list of
            `TaggingExample`, or a list of raw texts (split into words by
            `kbert.tokenizers.words.split_words`; for prediction).
        tokenizer: a kbert tokenizer.
        sequence_length: the static length S; S - 2 pieces fit beside [CLS] and [SEP].
    """
    check_int("sequence_length", sequence_length, 3)
    label_names = None
    if isinstance(data, TaggingData):
        label_names, data = data.label_names, data.examples
    data = list(data)
    if data and all(isinstance(item, str) for item in data):
        alignments, tags = tokenizer.align_texts(data), [None] * len(data)
    else:
        if not all(isinstance(item, TaggingExample) for item in data):
            raise TypeError("encode_tagging takes TaggingData, TaggingExamples or texts.")
        for example in data:
            if example.tags is not None and len(example.tags) != len(example.words):
                raise DataError(f"{example.origin}: {len(example.words)} words but "
                                f"{len(example.tags)} tags.")
        alignments = tokenizer.align_words([example.words for example in data])
        tags = [example.tags for example in data]
    if not data:
        raise DataError("No sentences to encode.")
    labelled = {t is not None for t in tags}
    if labelled == {True, False}:
        raise DataError(f"{next(e.origin for e in data if e.tags is None)}: no tags, while "
                        f"other sentences have them.")
    count, length = len(data), sequence_length
    arrays = {key: np.zeros((count, length), np.int32)
              for key in ("token_ids", "segment_ids", "padding_mask")}
    word_ids = np.full((count, length), -1, np.int32)
    labels = np.zeros((count, length), np.int32)
    weights = np.zeros((count, length), np.float32)
    truncated = 0
    for i, (alignment, sentence_tags) in enumerate(zip(alignments, tags)):
        pieces = alignment.piece_ids[: length - 2]
        owners = alignment.piece_words[: length - 2]
        kept = int(owners[-1]) + 1 if len(owners) else 0
        if len(alignment.piece_ids) > len(pieces):
            truncated += len(alignment.words) - kept  # a word cut inside keeps its first piece
        (arrays["token_ids"][i], arrays["segment_ids"][i], arrays["padding_mask"][i],
         _) = tokenizer.pack_row(pieces, None, length)
        first = np.ones(len(owners), bool)
        first[1:] = owners[1:] != owners[:-1]
        positions = np.flatnonzero(first) + 1  # after [CLS]
        word_ids[i, positions] = owners[first]
        if sentence_tags is not None:
            labels[i, positions] = np.asarray(sentence_tags, np.int32)[owners[first]]
            weights[i, positions] = 1.0
    has_tags = labelled == {True}
    return EncodedTagging(arrays, {LABELS: labels, LABEL_WEIGHTS: weights} if has_tags else None,
                          word_ids, alignments, label_names, int(truncated))


def tagging_dataset(data, tokenizer, sequence_length=128, batch_size=32, training=False,
                    shuffle_buffer=10_000, seed=0, drop_remainder=None, repeat=False):
    """Batches for a token classifier: `(features, {"labels", "label_weights"})`, or
    `features` alone for untagged data. See `encode_tagging` and
    `kbert.tasks.datasets.arrays_dataset` for the arguments."""
    encoded = encode_tagging(data, tokenizer, sequence_length)
    return arrays_dataset(encoded.features, encoded.labels, batch_size, training,
                          shuffle_buffer, seed, drop_remainder, repeat)
