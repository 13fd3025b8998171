"""`kbert.pipeline("question-answering")`: transformers' (4.57) QuestionAnsweringPipeline
on a kbert `QuestionAnswerer`; answers are exact substrings of the original context.

As transformers' fast path: the question is never cut; the context is cut into windows of
what `max_seq_len` leaves, each window repeating the last `doc_stride` tokens of the one
before; every window's start and end logits become probabilities over its context tokens
and [CLS], spans score start x end, and each span is widened to whole words. The rule is
the task's (`kbert.tasks.question_answering.decode.answer`); this class takes the options,
cuts the windows and runs the model."""

import numpy as np

from kbert.pipelines.base import InputTooLongError, Pipeline, check_int
from kbert.tasks.question_answering.decode import MASKED_LOGIT, answer, word_spans
from kbert.tasks.question_answering.features import window_starts


def windows(num_context, question_length, max_seq_len, doc_stride, specials=3):
    """(start, stop) of each window's context tokens, as the tokenizers library's
    overflowing truncation ("only_second", `stride`) cuts them: the task's
    `window_starts`, which fine-tuning and the SavedModels follow too. `specials`: the
    special tokens of a pair (3: [CLS] question [SEP] window [SEP]; RoBERTa's 4:
    <s> question </s></s> window </s>)."""
    room = max_seq_len - question_length - specials
    if num_context <= room:  # it fits: nothing is cut
        return [(0, num_context)]
    if room <= 0:
        raise InputTooLongError(
            f"The question is {question_length} tokens long: with the {specials} special "
            "tokens of a pair it leaves no room for the context in "
            f"max_seq_len={max_seq_len}. Shorten the question or raise max_seq_len.")
    if doc_stride >= room:
        raise ValueError(
            f"doc_stride={doc_stride} must be smaller than the context's room in a window "
            f"({room} tokens: max_seq_len={max_seq_len} minus the question's "
            f"{question_length} and {specials} special tokens). Lower doc_stride or raise "
            "max_seq_len.")
    return [(start, start + length)
            for start, length in window_starts(num_context, room, doc_stride)]


def examples(args, kwargs):
    """transformers' QuestionAnsweringArgumentHandler: (question, context) pairs."""
    if len(args) == 1:
        items = args[0]
    elif len(args) == 2 and all(isinstance(a, str) for a in args):
        items = [{"question": args[0], "context": args[1]}]
    elif args:
        items = list(args)
    elif "question" in kwargs and "context" in kwargs:
        question, context = kwargs.pop("question"), kwargs.pop("context")
        if isinstance(question, list) and isinstance(context, str):
            items = [{"question": q, "context": context} for q in question]
        elif isinstance(question, list) and isinstance(context, list):
            if len(question) != len(context):
                raise ValueError("Questions and contexts don't have the same lengths")
            items = [{"question": q, "context": c} for q, c in zip(question, context)]
        elif isinstance(question, str) and isinstance(context, str):
            items = [{"question": question, "context": context}]
        else:
            raise ValueError("Arguments can't be understood: question and context are "
                             "strings or lists of strings.")
    else:
        raise ValueError("The question-answering pipeline takes question= and context=, a "
                         "dict {'question': ..., 'context': ...} or a list of them.")
    items = [items] if isinstance(items, dict) else list(items)
    out = []
    for item in items:
        if not isinstance(item, dict):
            raise ValueError(f"{item!r:.80} argument needs to be a dict with keys question "
                             "and context.")
        for key in ("question", "context"):
            if key not in item:
                raise KeyError("You need to provide a dictionary with keys {question:..., "
                               "context:...}")
            if item[key] is None:
                raise ValueError(f"`{key}` cannot be None")
            if isinstance(item[key], str) and not item[key]:
                raise ValueError(f"`{key}` cannot be empty")
            if not isinstance(item[key], str):
                raise ValueError(f"`{key}` must be a string, got {type(item[key]).__name__}.")
        out.append((item["question"], item["context"]))
    return out, kwargs


class QuestionAnsweringPipeline(Pipeline):
    """Answers cut from contexts.

    Call: `pipe(question=q, context=c)` (either may be a list),
        `pipe({"question": q, "context": c})` or a list of such dicts.
    Options (at construction or per call):
        top_k: answers per question (default 1), best first.
        max_seq_len: tokens per window (default: the model's, at most 384).
        doc_stride: tokens a window repeats from the one before (default: half of
            max_seq_len, at most 128); must be under what the question leaves of a window.
        max_answer_len: the longest answer in tokens (default 15).
        max_question_len: taken and ignored, as by transformers' fast tokenizers (the
            question is never cut: one longer than max_seq_len is an error).
        handle_impossible_answer: also score "no answer" ("", start 0, end 0).
        align_to_words: widen answers to whole words (default True).
        batch_size, progress: see `kbert.pipeline`.
    Returns: per question {"score", "start", "end", "answer"} with `answer ==
    context[start:end]`, or a list of them for top_k > 1; one question gives its result,
    several a list.
    """

    task = "question-answering"
    # The logit of a position no answer may start or end on (the task's decode rule).
    masked_logit = MASKED_LOGIT
    OPTIONS = {"top_k": 1, "doc_stride": None, "max_answer_len": 15, "max_seq_len": None,
               "max_question_len": 64, "handle_impossible_answer": False,
               "align_to_words": True, "padding": None}

    def __call__(self, *args, **kwargs):
        pairs, kwargs = examples(args, dict(kwargs))
        opts, _ = self.options(kwargs)
        top_k, max_seq_len, doc_stride, max_answer_len = self.settings(opts)
        questions = self.encoder.ids([q for q, _ in pairs], self.specials)
        contexts = self.encoder.encode([c for _, c in pairs], self.specials)
        sequences, owners = [], []
        for i, (question, context) in enumerate(zip(questions, contexts)):
            for start, stop in windows(len(context.ids), len(question), max_seq_len,
                                       doc_stride, self.special_count(True)):
                sequences.append(self.pack(question, context.ids[start:stop]))
                owners.append((i, start, stop, len(question)))
        rows = self.run(sequences, opts)
        per_question = [[] for _ in pairs]
        for (i, start, stop, q_len), sequence, row in zip(owners, sequences, rows):
            per_question[i].append(self._window(contexts[i], start, stop,
                                                q_len + 1 + self.tokenizer.pair_separators,
                                                len(sequence), row))
        results = [answer(context, outs, top_k, bool(opts["handle_impossible_answer"]),
                          max_answer_len, bool(opts["align_to_words"]))
                   for (_, context), outs in zip(pairs, per_question)]
        return results[0] if len(results) == 1 else results

    def settings(self, opts):
        """(top_k, max_seq_len, doc_stride, max_answer_len) of the options, checked and with
        their defaults: what the call and `export` run with."""
        top_k = check_int("top_k", opts["top_k"], 1)
        max_answer_len = check_int("max_answer_len", opts["max_answer_len"], 1)
        max_seq_len = opts["max_seq_len"]
        max_seq_len = min(self.max_length, 384) if max_seq_len is None else check_int(
            "max_seq_len", max_seq_len, 4)
        if max_seq_len > self.max_length:
            raise ValueError(f"max_seq_len={max_seq_len} is longer than the model's "
                             f"max_sequence_length={self.max_length}.")
        doc_stride = opts["doc_stride"]
        doc_stride = min(max_seq_len // 2, 128) if doc_stride is None else check_int(
            "doc_stride", doc_stride, 0)
        if doc_stride > max_seq_len:
            raise ValueError(f"`doc_stride` ({doc_stride}) is larger than `max_seq_len` "
                             f"({max_seq_len})")
        return top_k, max_seq_len, doc_stride, max_answer_len

    @staticmethod
    def _window(encoding, start, stop, first, length, row):
        """`first`: the position of the window's first context token."""
        inside = slice(first, first + stop - start)
        allowed = np.zeros(length, np.int64)
        allowed[0] = allowed[inside] = 1
        offsets = np.zeros((length, 2), np.int32)
        offsets[inside] = encoding.offsets[start:stop]
        words = np.full(length, -1, np.int64)
        words[inside] = encoding.words[start:stop]
        word_starts, word_ends = word_spans(words, offsets)
        return (np.asarray(row["start_logits"][:length], np.float32),
                np.asarray(row["end_logits"][:length], np.float32), allowed, offsets,
                word_starts, word_ends)
