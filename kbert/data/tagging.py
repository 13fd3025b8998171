"""Token classification (NER, POS): words in, labels on wordpieces, predictions per word out.

Each word's label sits on its first wordpiece (`label_weights` 1 there, 0 on its other
pieces), as in the BERT paper; a prediction for a word is read from its first piece too.
Words are tokenized one by one (`kbert.data.text_spans`), so a word split into many pieces,
a word the vocabulary does not know ([UNK]) and a word that gives no piece at all keep
their place. Sentences longer than the sequence lose their last words (counted in
`EncodedTagging.truncated_words`; those words get no prediction).
"""

import collections
import dataclasses
from typing import Optional

import numpy as np

from kbert.data.task_features import (
    LABEL_WEIGHTS,
    LABELS,
    DataError,
    arrays_dataset,
    check_int,
    packed_row,
)
from kbert.data.task_records import TaggingData, TaggingExample
from kbert.data.text_spans import align_texts, align_words

Entity = collections.namedtuple("Entity", ["type", "start", "end", "text"])
Entity.__doc__ = "An entity: its type and `text == original[start:end]`."

# scheme: the prefixes it allows; L(ast) and U(nit) are BILOU's names for E and S.
SCHEMES = {"IOB2": "BI", "BIO": "BI", "IOB1": "BI", "BIOES": "BIES", "IOBES": "BIES",
           "BILOU": "BIES"}
_PREFIX_ALIASES = {"L": "E", "U": "S"}


@dataclasses.dataclass
class EncodedTagging:
    """Model inputs for tagging, and the alignment to read predictions back per word.

    Attributes:
        features: `token_ids`, `segment_ids`, `padding_mask`, int32 [N, S].
        labels: `labels` int32 [N, S], `label_weights` float32 [N, S]; None without tags.
        word_ids: int32 [N, S], the word index at each word's first piece, -1 elsewhere.
        alignments: per example, a `text_spans.Alignment` (text, words with spans, pieces).
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
        data: `TaggingData` (`read_conll`, `tfds_task("conll2003")`), a list of
            `TaggingExample`, or a list of raw texts (split into words by
            `text_spans.split_words`; for prediction).
        tokenizer: a kbert tokenizer.
        sequence_length: the static length S; S - 2 pieces fit beside [CLS] and [SEP].
    """
    check_int("sequence_length", sequence_length, 3)
    label_names = None
    if isinstance(data, TaggingData):
        label_names, data = data.label_names, data.examples
    data = list(data)
    if data and all(isinstance(item, str) for item in data):
        alignments, tags = align_texts(data, tokenizer), [None] * len(data)
    else:
        if not all(isinstance(item, TaggingExample) for item in data):
            raise TypeError("encode_tagging takes TaggingData, TaggingExamples or texts.")
        for example in data:
            if example.tags is not None and len(example.tags) != len(example.words):
                raise DataError(f"{example.origin}: {len(example.words)} words but "
                                f"{len(example.tags)} tags.")
        alignments = align_words([example.words for example in data], tokenizer)
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
         _) = packed_row(pieces, None, length, tokenizer.cls_id, tokenizer.sep_id,
                         tokenizer.pad_id)
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
    `task_features.arrays_dataset` for the arguments."""
    encoded = encode_tagging(data, tokenizer, sequence_length)
    return arrays_dataset(encoded.features, encoded.labels, batch_size, training,
                          shuffle_buffer, seed, drop_remainder, repeat)


def _parse(tag, allowed, scheme):
    if tag is None or tag == "O":
        return "O", None
    prefix, dash, kind = tag.partition("-")
    if not dash or len(prefix) != 1:
        return "I", tag  # IO tagging: a bare type continues its entity
    prefix = _PREFIX_ALIASES.get(prefix, prefix)
    if prefix not in allowed:
        raise ValueError(f"Tag {tag!r} is not of the {scheme} scheme (prefixes "
                         f"{', '.join(allowed)}, and O).")
    return prefix, kind


def decode_entities(tags_per_word, words_with_spans, scheme="IOB2", text=None):
    """Entities from word tags: [(entity_type, char_start, char_end, text)].

    Decoding is lenient, as seqeval's default mode: an entity starts at B- (and S-), and
    at an I- (E-) that does not continue an entity of its type; it ends before O, B-, S-,
    another type, and after E- / S-. So IOB1 and IOB2 (BIO) decode alike. A word with no
    prediction (None) counts as O.

    Args:
        tags_per_word: tag strings ("B-PER", "O", ...), one per word.
        words_with_spans: `Word`s (text, start, end) in the original text.
        scheme: "IOB2" / "BIO" / "IOB1", or "BIOES" / "IOBES" / "BILOU".
        text: the original text; the entities' text is cut from it. Without it, from the
            words, with spaces between them (exact for `join_words`' texts).
    """
    if scheme not in SCHEMES:
        raise ValueError(f"Unknown scheme {scheme!r}; use one of {sorted(SCHEMES)}.")
    if len(tags_per_word) != len(words_with_spans):
        raise ValueError(f"{len(tags_per_word)} tags for {len(words_with_spans)} words.")
    allowed = SCHEMES[scheme]
    entities, current = [], None  # current: [type, first word, last word]

    def close():
        nonlocal current
        if current is not None:
            kind, first, last = current
            start, end = words_with_spans[first].start, words_with_spans[last].end
            entities.append(Entity(kind, start, end, _cut(words_with_spans, first, last, text)))
        current = None

    for i, tag in enumerate(tags_per_word):
        prefix, kind = _parse(tag, allowed, scheme)
        if prefix == "O":
            close()
            continue
        if prefix in "BS" or current is None or current[0] != kind:
            close()
            current = [kind, i, i]
        current[2] = i
        if prefix in "ES":
            close()
    close()
    return entities


def _cut(words, first, last, text):
    if text is not None:
        return text[words[first].start : words[last].end]
    pieces = [words[first].text]
    for before, word in zip(words[first:last], words[first + 1 : last + 1]):
        pieces.append(" " * (word.start - before.end) + word.text)
    return "".join(pieces)
