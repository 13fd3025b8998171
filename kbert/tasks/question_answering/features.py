"""Extractive question answering (SQuAD v1.1 / v2.0): questions and contexts -> windows.

Encoding follows google-research/bert's run_squad.py: `[CLS] question [SEP] window [SEP]`
(RoBERTa's `<s> question </s></s> window </s>`, as transformers packs it), the question cut
to `max_question_length` pieces, the context cut into windows of what is left, each window
repeating the last `doc_stride` pieces of the one before: transformers' `doc_stride` (the
tokenizer's overflow `stride`, as its run_qa.py and question-answering pipeline use it), not
run_squad.py's step between window starts (`window_starts`, which the pipeline and the
SavedModels' windows follow too). A training window carries the answer's first and last
piece when it holds the whole answer, else 0 ([CLS]).

The windows' outputs go back to answers by `decode.decode_answers` (`EncodedQuestions.decode`).
"""

import dataclasses
from typing import Optional

import numpy as np

from kbert.tasks.datasets import (
    END_POSITIONS,
    START_POSITIONS,
    DataError,
    arrays_dataset,
    check_int,
)
from kbert.tasks.question_answering.data import QuestionAnsweringData, QuestionExample
from kbert.tasks.question_answering.decode import decode_answers
from kbert.tokenizers.words import tokenize_words


@dataclasses.dataclass(frozen=True, eq=False)
class Window:
    """One model input of a question: pieces `doc_start:doc_start + doc_length` of the
    context's wordpieces, at positions `offset:offset + doc_length` of the sequence."""
    example_index: int
    question_id: str
    context: str
    piece_spans: np.ndarray  # [context pieces, 2], shared by the question's windows
    doc_start: int
    doc_length: int
    offset: int
    sequence_length: int

    @property
    def token_spans(self):
        """int32 [S, 2]: each position's (start, end) characters in `context`; -1 off it."""
        spans = np.full((self.sequence_length, 2), -1, np.int32)
        spans[self.offset : self.offset + self.doc_length] = self.piece_spans[
            self.doc_start : self.doc_start + self.doc_length]
        return spans


@dataclasses.dataclass
class EncodedQuestions:
    """Model inputs for QA and the windows to decode the outputs with.

    Attributes:
        features: `token_ids`, `segment_ids`, `padding_mask`, int32 [windows, S].
        labels: `start_positions`, `end_positions` int32 [windows]; None when no question
            has an answer or is marked impossible (prediction data).
        windows: a `Window` per row.
        examples: the `QuestionExample`s.
        version_2: SQuAD 2.0 data (no-answer questions).
    """
    features: dict
    labels: Optional[dict]
    windows: list
    examples: list
    version_2: bool = False

    def decode(self, start_logits, end_logits, **kwargs):
        """`decode_answers` on these windows (`version_2` from the data unless given)."""
        kwargs.setdefault("version_2", self.version_2)
        return decode_answers(start_logits, end_logits, self.windows, **kwargs)


def window_starts(context_length, window_length, doc_stride):
    """[(start, length)] of the windows over `context_length` pieces: at most `window_length`
    pieces each, each repeating the last `doc_stride` pieces of the one before (so starting
    `window_length - doc_stride` after it), the last ending at the context's end, as the
    tokenizers library's overflowing truncation with `stride=doc_stride` cuts them.

    A context that fits is one window, whatever `doc_stride`; one that does not needs
    0 <= doc_stride < window_length (else no window would move on).
    """
    if context_length <= window_length:
        return [(0, context_length)]
    if window_length < 1:
        raise ValueError(f"A window of {window_length} context pieces cannot hold a context of "
                         f"{context_length}: there must be room for at least one piece.")
    if not 0 <= doc_stride < window_length:
        raise ValueError(f"doc_stride={doc_stride} (the pieces a window repeats from the one "
                         f"before) must be at least 0 and smaller than the window's context "
                         f"length, {window_length} pieces.")
    step = window_length - doc_stride
    count = 1 + -(-(context_length - window_length) // step)
    return [(k * step, min(window_length, context_length - k * step)) for k in range(count)]


def default_doc_stride(sequence_length, question_length, specials):
    """transformers' question-answering pipeline default, min(sequence_length // 2, 128),
    lowered where needed to stay under the context's room in a window after a question of
    `question_length` pieces and `specials` special tokens (0 when there is no room)."""
    room = sequence_length - question_length - specials
    return max(0, min(sequence_length // 2, 128, room - 1))


def _answer_pieces(example, spans):
    """First and last piece of the example's first answer, or None (no answer)."""
    if example.is_impossible or not example.answers:
        return None
    text, start = example.answers[0]
    end = start + len(text)
    inside = np.flatnonzero((spans[:, 0] < end) & (spans[:, 1] > start))
    if not len(inside):
        raise DataError(f"{example.origin}: the answer {text!r} at {start} has no wordpiece "
                        f"(only whitespace or deleted characters).")
    return int(inside[0]), int(inside[-1])


def encode_questions(data, tokenizer, sequence_length=384, doc_stride=None,
                     max_question_length=64):
    """Questions and contexts -> `EncodedQuestions` (one row per window).

    Args:
        data: `QuestionAnsweringData` (`data.read_squad`, `data.tfds_squad("squad/v1.1")`)
            or a list of `QuestionExample`.
        tokenizer: a kbert tokenizer.
        sequence_length: the static length S of every window.
        doc_stride: context pieces a window repeats from the one before (transformers'
            `doc_stride`, `window_starts`); under the context's room in a window after each
            question whose context needs several windows. Unset: `default_doc_stride` for
            the longest question kept (128 for sequence_length 384).
        max_question_length: questions keep their first this many pieces.
    """
    check_int("sequence_length", sequence_length, tokenizer.special_count(True) + 1)
    if doc_stride is not None:
        check_int("doc_stride", doc_stride, 0)
    check_int("max_question_length", max_question_length, 1)
    version_2 = False
    if isinstance(data, QuestionAnsweringData):
        version_2, data = data.version_2, data.examples
    examples = list(data)
    if not examples or not all(isinstance(e, QuestionExample) for e in examples):
        raise DataError("encode_questions takes QuestionAnsweringData or QuestionExamples "
                        "(at least one).")
    questions = tokenize_words(tokenizer, [e.question for e in examples], texts=True)
    contexts = list(dict.fromkeys(e.context for e in examples))
    alignments = dict(zip(contexts, tokenizer.align_texts(contexts)))
    if doc_stride is None:
        longest = max(min(len(questions[e.question]), max_question_length) for e in examples)
        doc_stride = default_doc_stride(sequence_length, longest,
                                        tokenizer.special_count(True))
    labelled = any(e.answers or e.is_impossible for e in examples)
    rows, windows, starts, ends = [], [], [], []
    for index, example in enumerate(examples):
        question = questions[example.question][:max_question_length]
        window_length = sequence_length - len(question) - tokenizer.special_count(True)
        if window_length < 1:
            raise ValueError(f"sequence_length={sequence_length} leaves no room for the "
                             f"context after a question of {len(question)} pieces; raise it "
                             f"or lower max_question_length={max_question_length}.")
        alignment = alignments[example.context]
        answer = _answer_pieces(example, alignment.piece_spans) if labelled else None
        if doc_stride >= window_length and len(alignment.piece_ids) > window_length:
            raise ValueError(
                f"doc_stride={doc_stride} must be smaller than the window's context length, "
                f"{window_length} pieces (sequence_length={sequence_length} minus "
                f"{len(question)} question pieces and {tokenizer.special_count(True)} "
                f"special tokens), for question {example.id!r}, whose context of "
                f"{len(alignment.piece_ids)} pieces needs several windows. Lower doc_stride "
                f"or max_question_length={max_question_length}, or raise sequence_length.")
        for doc_start, doc_length in window_starts(len(alignment.piece_ids), window_length,
                                                   doc_stride):
            piece_ids = alignment.piece_ids[doc_start : doc_start + doc_length]
            *row, offset = tokenizer.pack_row(question, piece_ids, sequence_length)
            rows.append(row)
            windows.append(Window(index, example.id, example.context, alignment.piece_spans,
                                  doc_start, doc_length, offset, sequence_length))
            start = end = 0
            if answer is not None and doc_start <= answer[0] and answer[1] < doc_start + doc_length:
                start, end = (offset + piece - doc_start for piece in answer)
            starts.append(start)
            ends.append(end)
    features = {key: np.stack([row[i] for row in rows])
                for i, key in enumerate(("token_ids", "segment_ids", "padding_mask"))}
    labels = None
    if labelled:
        labels = {START_POSITIONS: np.array(starts, np.int32),
                  END_POSITIONS: np.array(ends, np.int32)}
    return EncodedQuestions(features, labels, windows, examples, version_2)


def question_answering_dataset(data, tokenizer, sequence_length=384, doc_stride=None,
                               max_question_length=64, batch_size=32, training=False,
                               shuffle_buffer=10_000, seed=0, drop_remainder=None,
                               repeat=False):
    """Batches for a span QA model: `(features, {"start_positions", "end_positions"})`.

    For predictions, `encode_questions` keeps the windows that `decode.decode_answers`
    needs.
    """
    encoded = encode_questions(data, tokenizer, sequence_length, doc_stride,
                               max_question_length)
    return arrays_dataset(encoded.features, encoded.labels, batch_size, training,
                          shuffle_buffer, seed, drop_remainder, repeat)

