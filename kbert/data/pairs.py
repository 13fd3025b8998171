"""Sentence pairs for NSP / SOP, or packed single segments, from tokenized documents.

This follows google-research/bert's `create_instances_from_document`: sentences of a document
accumulate into a chunk until a target length (the full length, or with `short_seq_prob` a
random shorter one), the chunk splits at a random sentence boundary into A and B, and the
longer segment is truncated from a random end until the pair fits. Differences, on purpose:

- the NSP label is drawn first, 50/50, and a one-sentence chunk is split inside the
  sentence for a real continuation (the original forces such chunks to "random", which
  skews the labels away from 50%);
- the "random" segment B comes from another document in a window of `random_buffer`
  documents around the current one, half of them read ahead (the original holds the whole
  corpus in memory);
- truncation takes the same number of tokens from each end as the original's token-by-token
  coin flips (a binomial draw), so a 1 MB line costs no more than a short one.

Nothing is lost silently. NSP / SOP pairs are truncated as the original's
`truncate_seq_pair` truncates them (a sentence longer than the pair's room included), and
`PairBuilder.statistics` counts it: "pairs_truncated", "tokens_truncated", and
"tokens_dropped" (a chunk of one token, which gives no pair). With sentence_task "none" a
segment holds whole sentences, so a sentence longer than a segment is split into pieces of
the segment's length (counted as "sentences_split") instead of being cut off. The builder
logs the counts when its input ends.

Labels: NSP 0 = B follows A, 1 = B is from another document; SOP 0 = in order, 1 = swapped.
"""

import collections
import logging

import numpy as np

SENTENCE_TASKS = ("nsp", "sop", "none")


def truncate_pair(a, b, max_tokens, rng):
    """Truncates the longer of `a`, `b` until `len(a) + len(b) <= max_tokens`."""
    la, lb = len(a), len(b)
    excess = la + lb - max_tokens
    if excess <= 0:
        return a, b
    # The original removes one token at a time from the longer (from b on ties).
    cut_a = min(max(la - lb, 0), excess)
    cut_b = min(max(lb - la, 0), excess - cut_a)
    rest = excess - cut_a - cut_b
    cut_b += (rest + 1) // 2  # alternating phase: equal lengths, b first
    cut_a += rest // 2
    front_a = rng.binomial(cut_a, 0.5) if cut_a else 0
    front_b = rng.binomial(cut_b, 0.5) if cut_b else 0
    return a[front_a : la - (cut_a - front_a)], b[front_b : lb - (cut_b - front_b)]


class PairBuilder:
    """Turns tokenized documents into fixed-length examples.

    Args:
        sequence_length: length of every example, [CLS] and [SEP]s included.
        sentence_task: "nsp", "sop" or "none" (one segment of whole sentences, no label).
        cls_id, sep_id, pad_id: special-token ids.
        short_seq_prob: probability of a shorter random target length for a document.
        seed: seed of the numpy generator; the same seed and input give the same examples.
        random_buffer: how many documents around the current one the random B segments
            come from (half of them read ahead).
        pack_across_documents: sentence_task "none" only: pack the sentences of consecutive
            documents into one segment, a `sep_id` between two documents (RoBERTa's
            FULL-SENTENCES: every example but the last is full); False: a segment holds one
            document's sentences (DOC-SENTENCES; a short document gives a short example).
        fill_rows: with `pack_across_documents`, ModernBERT's packed sequences instead: each
            document as `cls_id` + its tokens + `sep_id`, the documents one stream cut every
            `sequence_length` tokens, so every example is full (no padding; only the stream's
            last may be short) and a document may run on into the next example;
            `short_seq_prob` does not apply. Each example adds `document_ids`: 1 on its
            first document's tokens (or the piece that runs on), 2 on the next's, ..., 0 on
            padding.
    """

    def __init__(self, sequence_length, sentence_task, cls_id, sep_id, pad_id,
                 short_seq_prob=0.1, seed=0, random_buffer=1000, pack_across_documents=False,
                 fill_rows=False):
        if sentence_task not in SENTENCE_TASKS:
            raise ValueError(f"Unknown sentence_task {sentence_task!r}. Allowed: "
                             f"{', '.join(SENTENCE_TASKS)}.")
        if pack_across_documents and sentence_task != "none":
            raise ValueError(f"pack_across_documents packs one segment: it needs sentence_task "
                             f"'none', got {sentence_task!r}.")
        if fill_rows and not pack_across_documents:
            raise ValueError("fill_rows fills rows with the documents packed one after the "
                             "other: it needs pack_across_documents=True.")
        self.pack_across_documents = bool(pack_across_documents)
        self.fill_rows = bool(fill_rows)
        special = 3 if sentence_task != "none" else 2
        if not isinstance(sequence_length, int) or sequence_length < special + 2:
            raise ValueError(
                f"sequence_length must be an integer >= {special + 2}, got {sequence_length!r}."
            )
        if not 0 <= short_seq_prob <= 1:
            raise ValueError(f"short_seq_prob must be in [0, 1], got {short_seq_prob!r}.")
        self.sequence_length = sequence_length
        self.sentence_task = sentence_task
        self.cls_id, self.sep_id, self.pad_id = cls_id, sep_id, pad_id
        self.short_seq_prob = short_seq_prob
        self.max_tokens = sequence_length - special
        self.rng = np.random.default_rng(seed)
        self.random_buffer = max(int(random_buffer), 2)
        self.window = collections.deque(maxlen=self.random_buffer)
        # What the examples leave out or change of the input, over every `examples` call.
        self.statistics = collections.Counter(
            {key: 0 for key in ("pairs_truncated", "tokens_truncated", "tokens_dropped",
                                "sentences_split")})

    def _target_length(self):
        if self.rng.random() < self.short_seq_prob:
            return int(self.rng.integers(2, self.max_tokens + 1))
        return self.max_tokens

    def _example(self, a, b=None, label=None):
        token_ids = np.full(self.sequence_length, self.pad_id, np.int32)
        segment_ids = np.zeros(self.sequence_length, np.int32)
        padding_mask = np.zeros(self.sequence_length, np.int32)
        la = len(a)
        token_ids[0] = self.cls_id
        token_ids[1 : la + 1] = a
        token_ids[la + 1] = self.sep_id
        end = la + 2
        if b is not None:
            token_ids[end : end + len(b)] = b
            end += len(b)
            token_ids[end] = self.sep_id
            end += 1
            segment_ids[la + 2 : end] = 1
        padding_mask[:end] = 1
        example = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
        if label is not None:
            example["next_sentence_labels"] = np.int32(label)
        return example

    def _random_segment(self, target, current):
        # As in the original: up to 10 draws for another document; a one-document corpus
        # has none, and then the same document serves.
        for _ in range(10):
            document = self.window[int(self.rng.integers(len(self.window)))]
            if document is not current:
                break
        start = int(self.rng.integers(len(document)))
        pieces, length = [], 0
        for sentence in document[start:]:
            pieces.append(sentence)
            length += len(sentence)
            if length >= target:
                break
        return np.concatenate(pieces)

    def _split(self, chunk):
        """A and B from a chunk of >= 2 tokens: at a sentence boundary, or inside one sentence."""
        if len(chunk) >= 2:
            a_end = int(self.rng.integers(1, len(chunk)))
            return np.concatenate(chunk[:a_end]), np.concatenate(chunk[a_end:]), a_end
        tokens = chunk[0]
        cut = int(self.rng.integers(1, len(tokens)))
        return tokens[:cut], tokens[cut:], 1

    def examples(self, documents):
        """Examples from an iterable of documents, each a list of 1-D int arrays (sentences)."""
        try:  # the statistics are logged also when a consumer stops early (take(n))
            if self.pack_across_documents:
                yield from (self._filled_rows(documents) if self.fill_rows
                            else self._packed_across(documents))
                return
            pending = collections.deque()
            for document in documents:
                document = [np.asarray(s, np.int32) for s in document if len(s)]
                if not document:
                    continue
                self.window.append(document)
                pending.append(document)
                if len(pending) > self.random_buffer // 2:
                    yield from self._document_examples(pending.popleft())
            while pending:
                yield from self._document_examples(pending.popleft())
        finally:
            self.log_statistics()

    def block_examples(self, documents, rngs):
        """Examples of one block of documents, each document's drawn from its own generator
        (`rngs[i]` for `documents[i]`); NSP's random B segments come from the block's other
        documents. What a block gives depends on its documents and generators only, never
        on what was read before it: the same block on any worker gives the same examples."""
        documents = [[np.asarray(s, np.int32) for s in document if len(s)]
                     for document in documents]
        self.window = collections.deque((d for d in documents if d),
                                        maxlen=max(len(documents), 2))
        for document, rng in zip(documents, rngs):
            if document:
                self.rng = rng
                yield from self._document_examples(document)

    def log_statistics(self):
        """Logs what truncation and dropping cost so far (nothing is lost silently)."""
        counts = self.statistics
        if self.sentence_task == "none":
            if counts["sentences_split"]:
                logging.info("%d sentences longer than %d tokens were split into segments "
                             "of that length.", counts["sentences_split"], self.max_tokens)
        elif counts["pairs_truncated"] or counts["tokens_dropped"]:
            logging.info("%d pairs longer than %d tokens were truncated (%d tokens, as the "
                         "original's truncate_seq_pair); %d tokens in chunks too short for a "
                         "pair were dropped.", counts["pairs_truncated"], self.max_tokens,
                         counts["tokens_truncated"], counts["tokens_dropped"])

    def _pieces(self, sentence):
        """A sentence longer than a segment, in pieces of the segment's length (the last one
        shorter): a segment of sentence_task "none" holds whole sentences, and cutting one
        off would lose its tail."""
        if len(sentence) <= self.max_tokens:
            return [sentence]
        self.statistics["sentences_split"] += 1
        return np.split(sentence, range(self.max_tokens, len(sentence), self.max_tokens))

    def _document_examples(self, document):
        target = self._target_length()
        if self.sentence_task == "none":
            yield from self._packed(document, target)
            return
        chunk, length, i = [], 0, 0
        while i < len(document):
            chunk.append(document[i])
            length += len(document[i])
            if i == len(document) - 1 or length >= target:
                if length >= 2:  # else the chunk cannot give two non-empty segments
                    label = int(self.rng.random() < 0.5)
                    a, b, a_end = self._split(chunk)
                    if self.sentence_task == "nsp" and label == 1:
                        b = self._random_segment(target - len(a), document)
                        i -= len(chunk) - a_end  # the unused sentences start the next chunk
                    elif self.sentence_task == "sop" and label == 1:
                        a, b = b, a
                    full = len(a) + len(b)
                    a, b = truncate_pair(a, b, self.max_tokens, self.rng)
                    if full > len(a) + len(b):
                        self.statistics["pairs_truncated"] += 1
                        self.statistics["tokens_truncated"] += full - len(a) - len(b)
                    if len(a) and len(b):
                        yield self._example(a, b, label)
                    else:
                        self.statistics["tokens_dropped"] += len(a) + len(b)
                else:
                    self.statistics["tokens_dropped"] += length
                chunk, length = [], 0
            i += 1

    def _packed(self, document, target):
        chunk, length = [], 0
        for sentence in (p for s in document for p in self._pieces(s)):
            if chunk and length + len(sentence) > target:
                yield self._example(np.concatenate(chunk))
                chunk, length = [], 0
                target = self._target_length()
            chunk.append(sentence)
            length += len(sentence)
        if chunk:
            yield self._example(np.concatenate(chunk))

    def _packed_across(self, documents):
        """Whole sentences of consecutive documents in one stream, cut into segments of the
        target length at sentence boundaries; a [SEP] marks where a document ends inside a
        segment (none at a segment's start or end). A sentence longer than a segment goes in
        pieces (`_pieces`)."""
        chunk, length, target = [], 0, self._target_length()
        for document in documents:
            first = True
            for sentence in (p for s in document for p in self._pieces(np.asarray(s, np.int32))):
                if not len(sentence):
                    continue
                boundary = first and bool(chunk)  # a new document inside the segment
                first = False
                if chunk and length + boundary + len(sentence) > target:
                    yield self._example(np.concatenate(chunk))
                    chunk, length, boundary = [], 0, False
                    target = self._target_length()
                if boundary:
                    chunk.append(np.array([self.sep_id], np.int32))
                    length += 1
                chunk.append(sentence)
                length += len(sentence)
        if chunk:
            yield self._example(np.concatenate(chunk))

    def _filled_rows(self, documents):
        """ModernBERT's packing (see `fill_rows`): [CLS] document [SEP] [CLS] document [SEP]
        ... as one stream, cut into rows of exactly `sequence_length` tokens; each row's
        `document_ids` number its documents (or pieces of one) 1, 2, ..., 0 on padding."""
        row, length = [], 0
        for document in documents:
            sentences = [np.asarray(s, np.int32) for s in document if len(s)]
            if not sentences:
                continue
            stream = np.concatenate([[self.cls_id], *sentences, [self.sep_id]]).astype(np.int32)
            while len(stream):
                taken = stream[: self.sequence_length - length]
                row.append(taken)
                length += len(taken)
                stream = stream[len(taken):]
                if length == self.sequence_length:
                    yield self._row(row)
                    row, length = [], 0
        if row:
            yield self._row(row)

    def _row(self, pieces):
        """One segment of the documents' `pieces` as they are (their [CLS] and [SEP]s
        inside), padded, with the `document_ids` of its tokens."""
        tokens = np.concatenate(pieces)
        token_ids = np.full(self.sequence_length, self.pad_id, np.int32)
        token_ids[: len(tokens)] = tokens
        padding_mask = (np.arange(self.sequence_length) < len(tokens)).astype(np.int32)
        document_ids = np.zeros(self.sequence_length, np.int32)
        document_ids[: len(tokens)] = np.repeat(np.arange(1, len(pieces) + 1, dtype=np.int32),
                                                [len(p) for p in pieces])
        return {"token_ids": token_ids, "segment_ids": np.zeros(self.sequence_length, np.int32),
                "padding_mask": padding_mask, "document_ids": document_ids}
