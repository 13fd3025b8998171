"""BERTSum's input layout, and documents -> model rows with their oracle labels.

A document's sentences are packed `[CLS] s1 [SEP] [CLS] s2 [SEP] ...` (RoBERTa: `<s> s1 </s>
<s> s2 </s>`), segment ids alternating by sentence (BERTSum's interval segments: 0 for the
1st, 3rd, ... sentence, the tokenizer's second segment id for the 2nd, 4th, ...: 1, or 0 for
RoBERTa's one segment type), or, with the model's `segments` "paragraph", by paragraph (every
sentence of the 1st, 3rd, ... paragraph 0, of the 2nd, 4th, ... the second id), which shows
the model where a paragraph ends.

Documents longer than the model's positions are cut into windows at sentence boundaries:
each window holds as many whole sentences as fit in `sequence_length` (segments alternate
again from 0, its first sentence's). A sentence longer than a window by itself keeps its
first `sequence_length - 2` pieces. What becomes of the windows is the model's `windows`
setting (`model.WINDOWS`):

- "first" (BERTSum's truncation at 512 tokens): the first window alone is a model row; the
  sentences after it are not scored and never chosen. Every position id is the token's
  position in the document, so the model sees where a sentence stands: the lead bias of
  news and of papers' abstracts is there to learn.
- "all": every window is a model row of its own, so every sentence is scored; but each
  window's positions start again at 0, so a later window's first sentence looks like the
  document's first.
"""

import dataclasses

import numpy as np

from kbert.tasks.datasets import LABEL_WEIGHTS, LABELS, check_int
from kbert.tokenizers.packing import PADDING_MASK, SEGMENT_IDS, TOKEN_IDS, second_segment_id
from kbert.tasks.extractive_summarization import metrics
from kbert.tasks.extractive_summarization import oracle as oracle_lib
from kbert.tasks.extractive_summarization.model import check_segments, check_windows
from kbert.tokenizers.encoding import Encoder


@dataclasses.dataclass
class Window:
    """One model row of a document: its `token_ids`, `segment_ids` (int32 [length]), the
    index of its first sentence in the document and each sentence's [CLS] position."""

    token_ids: np.ndarray
    segment_ids: np.ndarray
    first: int
    positions: np.ndarray


def windows(sentence_ids, sequence_length, cls_id, sep_id, second_segment=1, groups=None):
    """The `Window`s of a document, given each sentence's piece ids (see the module's
    docstring). `groups`: what the segment ids alternate by, a non-decreasing number per
    sentence (its paragraph); `None`: the sentences themselves."""
    check_int("sequence_length", sequence_length, 3)
    groups = range(len(sentence_ids)) if groups is None else groups
    if len(groups) != len(sentence_ids):
        raise ValueError(f"groups must give a number per sentence: {len(groups)} for "
                         f"{len(sentence_ids)} sentences.")
    out, ids, segments, positions, first = [], [], [], [], 0
    for index, pieces in enumerate(sentence_ids):
        pieces = np.asarray(pieces, np.int32)[:sequence_length - 2]
        if ids and len(ids) + len(pieces) + 2 > sequence_length:
            out.append(Window(np.array(ids, np.int32), np.array(segments, np.int32), first,
                              np.array(positions, np.int32)))
            ids, segments, positions, first = [], [], [], index
        segment = second_segment if (groups[index] - groups[first]) % 2 else 0
        positions.append(len(ids))
        ids.extend([cls_id, *pieces.tolist(), sep_id])
        segments.extend([segment] * (len(pieces) + 2))
    if ids:
        out.append(Window(np.array(ids, np.int32), np.array(segments, np.int32), first,
                          np.array(positions, np.int32)))
    return out


def document_windows(examples, tokenizer, sequence_length, which="all", segments="sentence"):
    """The `Window`s of each example's sentences (a list per example), tokenized together:
    all of them, or (`which="first"`) the first alone; segment ids alternating by
    `segments` ("sentence" or "paragraph": the `Sentence`s' `paragraph`)."""
    check_windows(which)
    check_segments(segments)
    encoder = Encoder(tokenizer)
    texts = [s.text for example in examples for s in example.sentences]
    ids = iter(encoder.ids(texts))
    second = second_segment_id(tokenizer)
    out = [windows([next(ids) for _ in example.sentences], sequence_length,
                   tokenizer.cls_id, tokenizer.sep_id, second,
                   [s.paragraph for s in example.sentences] if segments == "paragraph"
                   else None)
           for example in examples]
    return [w[:1] for w in out] if which == "first" else out


@dataclasses.dataclass
class EncodedSummaries:
    """A split as model rows.

    Attributes:
        features: `token_ids`, `segment_ids`, `padding_mask`, int32 [rows, sequence_length].
        labels: `labels` (1 at the [CLS] of an oracle sentence; with `labels="rouge"` each
            sentence's soft ROUGE target there) and `label_weights` (1 at every sentence's
            [CLS]), float32 [rows, sequence_length]; `None` unlabelled.
        rows: per row, (example index, `Window`).
        oracles: per example, the oracle's sentence indices (`None` unlabelled).
    """

    features: dict
    labels: dict
    rows: list
    oracles: list
    count: int

    def sentence_scores(self, logits):
        """Logits [rows, >= row length] -> per example, the sigmoid score of each of its
        scored sentences, its first ones (float32 [sentences scored]: all of them unless
        the windows were "first")."""
        scores = [[] for _ in range(self.count)]
        for (example, window), row in zip(self.rows, np.asarray(logits, np.float32)):
            scores[example].append(row[window.positions])
        return [1.0 / (1.0 + np.exp(-np.concatenate(s))) if s else np.zeros([0], np.float32)
                for s in scores]


def encode_summaries(data, tokenizer, sequence_length, oracle_size=oracle_lib.ORACLE_SIZE,
                     which="all", labels="oracle", segments="sentence"):
    """`SummaryData` -> `EncodedSummaries` at `sequence_length` (the document's windows:
    `which`, "all" or "first"; segment ids by `segments`, "sentence" or "paragraph"),
    labelled where the examples have reference summaries: by the greedy oracle
    (`labels="oracle"`: 1 for the sentences `oracle.greedy_oracle` picks, at most
    `oracle_size`, chosen among all the document's sentences; 0 for the others) or
    by each sentence's own ROUGE (`labels="rouge"`: `oracle.sentence_rouge`, soft targets in
    [0, 1]). The oracle's picks are kept in `oracles` either way."""
    if labels not in oracle_lib.LABELS:
        raise ValueError(f"labels must be one of {oracle_lib.LABELS} (the summarizer's "
                         f"training targets), got {labels!r}.")
    examples = data.examples
    labelled = all(e.summary is not None for e in examples)
    rouge = metrics.scorer() if labelled else None
    oracles = [oracle_lib.greedy_oracle([s.text for s in e.sentences], e.summary, oracle_size,
                                        rouge) if labelled else None for e in examples]
    soft = [oracle_lib.sentence_rouge([s.text for s in e.sentences], e.summary, rouge)
            if labelled and labels == "rouge" else None for e in examples]
    rows = [(i, w) for i, ws in enumerate(document_windows(examples, tokenizer,
                                                           sequence_length, which, segments))
            for w in ws]
    shape = (len(rows), sequence_length)
    features = {TOKEN_IDS: np.full(shape, tokenizer.pad_id, np.int32),
                SEGMENT_IDS: np.zeros(shape, np.int32), PADDING_MASK: np.zeros(shape, np.int32)}
    targets = {LABELS: np.zeros(shape, np.float32),
               LABEL_WEIGHTS: np.zeros(shape, np.float32)}
    for r, (example, window) in enumerate(rows):
        length = len(window.token_ids)
        features[TOKEN_IDS][r, :length] = window.token_ids
        features[SEGMENT_IDS][r, :length] = window.segment_ids
        features[PADDING_MASK][r, :length] = 1
        targets[LABEL_WEIGHTS][r, window.positions] = 1.0
        if labelled and labels == "rouge":
            sentences = window.first + np.arange(len(window.positions))
            targets[LABELS][r, window.positions] = soft[example][sentences]
        elif labelled:
            chosen = [p for k, p in enumerate(window.positions)
                      if window.first + k in oracles[example]]
            targets[LABELS][r, chosen] = 1.0
    return EncodedSummaries(features, targets if labelled else None, rows, oracles,
                            len(examples))
