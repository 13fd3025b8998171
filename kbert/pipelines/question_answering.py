"""`kbert.pipeline("question-answering")`: transformers' (4.57) QuestionAnsweringPipeline
on a kbert `QuestionAnswerer`; answers are exact substrings of the original context.

As transformers' fast path: the question is never cut; the context is cut into windows of
what `max_seq_len` leaves, each window repeating the last `doc_stride` tokens of the one
before; every window's start and end logits become probabilities over its context tokens
and [CLS], spans score start x end, and each span is widened to whole words."""

import numpy as np

from kbert.data.question_answering import window_starts
from kbert.data.task_features import pair_separators
from kbert.pipelines.base import InputTooLongError, Pipeline, check_int
from kbert.tasks.text_classification.decode import softmax

_MASKED = -10000.0


def windows(num_context, question_length, max_seq_len, doc_stride, specials=3):
    """(start, stop) of each window's context tokens, as the tokenizers library's
    overflowing truncation ("only_second", `stride`) cuts them: `kbert.data`'s
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


def decode_spans(start, end, top_k, max_answer_len, allowed):
    """transformers' `decode_spans`: the `top_k` best (start, end) of start x end scores
    with end - start < max_answer_len, both on allowed positions."""
    outer = np.matmul(start[None, :, None], end[None, None, :])
    candidates = np.tril(np.triu(outer), max_answer_len - 1)
    flat = candidates.flatten()
    if top_k == 1:
        order = [np.argmax(flat)]
    elif len(flat) < top_k:
        order = np.argsort(-flat)
    else:
        best = np.argpartition(-flat, top_k)[0:top_k]
        order = best[np.argsort(-flat[best])]
    starts, ends = np.unravel_index(order, candidates.shape)[1:]
    allowed_positions = np.concatenate([[0], allowed.nonzero()[0]])
    keep = np.isin(starts, allowed_positions) & np.isin(ends, allowed_positions)
    starts, ends = starts[keep], ends[keep]
    return starts, ends, candidates[0, starts, ends]


def answer(context, windows_out, top_k, handle_impossible_answer, max_answer_len,
           align_to_words):
    """One question's answers from its windows (numpy / Python only).

    windows_out: per window (start_logits [S], end_logits [S], allowed [S] (1 on [CLS] and
        the context), offsets [S, 2], and word_starts, word_ends [S]: the characters of each
        token's word, -1 off the context. A word cut by the window's edge is the part of it
        in the window, as transformers' `word_to_chars` of the window's encoding gives it.
    """
    null_score, answers = 1000000.0, []
    pre_top_k = top_k * 2 + 10 if align_to_words else top_k
    for start, end, allowed, offsets, word_starts, word_ends in windows_out:
        start = softmax(np.where(allowed == 0, _MASKED, start).astype(np.float32))
        end = softmax(np.where(allowed == 0, _MASKED, end).astype(np.float32))
        if handle_impossible_answer:
            null_score = min(null_score, (start[0] * end[0]).item())
        start[0] = end[0] = 0.0
        for s, e, score in zip(*decode_spans(start, end, pre_top_k, max_answer_len, allowed)):
            if align_to_words and word_starts[s] >= 0 and word_ends[e] >= 0:
                first, last = word_starts[s], word_ends[e]
            else:  # [CLS], or words not asked for: the tokens' own characters
                first, last = offsets[s][0], offsets[e][1]
            text = context[int(first):int(last)]
            same = next((a for a in answers if a["answer"].lower() == text.lower()), None)
            if same is not None:
                same["score"] += score.item()
            else:
                answers.append({"score": score.item(), "start": int(first), "end": int(last),
                                "answer": text})
    if handle_impossible_answer:
        answers.append({"score": null_score, "start": 0, "end": 0, "answer": ""})
    answers = sorted(answers, key=lambda a: a["score"], reverse=True)[:top_k]
    return answers[0] if len(answers) == 1 else answers


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

    Call: `pipe(question=q, context=c)` (either may be a list), `pipe({"question": q,
        "context": c})` or a list of such dicts.
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
    # The logit of a position no answer may start or end on; the export reads it here.
    masked_logit = _MASKED
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
                                                q_len + 1 + pair_separators(self.tokenizer),
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
        word_starts = np.full(length, -1, np.int32)
        word_ends = np.full(length, -1, np.int32)
        words = encoding.words[start:stop]
        for word in np.unique(words[words >= 0]):
            tokens = np.flatnonzero(words == word)
            word_starts[first + tokens] = offsets[first + tokens[0], 0]
            word_ends[first + tokens] = offsets[first + tokens[-1], 1]
        return (np.asarray(row["start_logits"][:length], np.float32),
                np.asarray(row["end_logits"][:length], np.float32), allowed, offsets,
                word_starts, word_ends)
