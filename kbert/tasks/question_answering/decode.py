"""Extractive question answering: start and end logits back to answers cut from the context
(numpy and Python only). One span search (`search`) serves the two contracts kbert keeps;
a `SpanRule` says what they differ in:

- `decode_answers` (`RUN_SQUAD`): google-research/bert's run_squad.py (fine-tuning's scores,
  kbert's SavedModel signature). A span scores start logit + end logit; the candidates of a
  window are its `n_best` best starts x `n_best` best ends, the `n_best` best kept; over the
  windows of a question, each character span keeps its highest score, and on ties the
  earliest start, then the earliest end wins. The answer is the pieces' characters. SQuAD
  2.0: "no answer" is a verdict, "" when null score - best score > `null_threshold`.
- `answer` (`TRANSFORMERS`): transformers' (4.57) question-answering pipeline. A span scores
  start x end probability (softmax over [CLS] and the context, the rest at `MASKED_LOGIT`);
  the candidates are the `top_k` best cells of the whole band (as its `decode_spans`, ties
  in numpy's partition order), each widened to whole words (`align_to_words`); over the
  windows, answers of the same lower-cased text are merged into the first with their scores
  added, and "no answer" is one more candidate, ranked with the others, no threshold.

Written once for both: the band of valid spans (start <= end, at most `max_answer_length`
tokens, both on positions the window allows: the context, and for transformers its
[CLS]), the ranking of a window's cells, the null score (the lowest [CLS] start-and-end
score over the windows), a span's characters (its tokens' offsets, or its words') and the
ranking over the windows. Within one window the two rank spans alike (a product of
softmaxes is monotone in the sum of logits); both take their windows from
`features.window_starts`. The SavedModel's graph (`pipeline_serving.py`, its windows from
`windows_graph.py`) follows transformers' rule in TensorFlow ops; the host side of a TFLite answerer (`tflite_answer`)
calls `answer` on the one window the model reads.
"""

from typing import NamedTuple

import numpy as np

from kbert.tasks.datasets import check_int
from kbert.tokenizers.alignment import char_offset
from kbert.tasks.text_classification.decode import softmax

# The logit of a position no answer may start or end on, before transformers' softmax.
MASKED_LOGIT = -10000.0


class SpanRule(NamedTuple):
    """What run_squad.py's and transformers' span searches differ in."""

    probabilities: bool  # start x end probability (True), or start + end logit
    per_side: bool  # candidates: the best starts x the best ends, or the best of all cells
    merge_text: bool  # over windows: one lower-cased text sums (True), one span keeps its best
    earliest: bool  # ties go to the earliest span (True), or as transformers' numpy has them


RUN_SQUAD = SpanRule(probabilities=False, per_side=True, merge_text=False, earliest=True)
TRANSFORMERS = SpanRule(probabilities=True, per_side=False, merge_text=True, earliest=False)


def _top(scores, k, earliest):
    """The indices of the `k` best of the flat `scores`, best first."""
    if earliest:
        return np.argsort(-scores, kind="stable")[:k]
    # transformers' decode_spans
    if k == 1:
        return np.array([np.argmax(scores)])
    if len(scores) < k:
        return np.argsort(-scores)
    best = np.argpartition(-scores, k)[0:k]
    return best[np.argsort(-scores[best])]


def _window_spans(rule, start, end, allowed, max_answer_length, limit):
    """One window's null score and its `limit` best (score, first, last) token spans (fewer
    where cells fall off the allowed positions or, for sums, off the band)."""
    if rule.probabilities:
        start = softmax(np.where(allowed == 0, MASKED_LOGIT, start).astype(np.float32))
        end = softmax(np.where(allowed == 0, MASKED_LOGIT, end).astype(np.float32))
        null = (start[0] * end[0]).item()
        start[0] = end[0] = 0.0  # [CLS] is the null answer, not a span
        combine, off_band = np.multiply, 0.0
    else:
        null = float(start[0] + end[0])
        combine, off_band = np.add, -np.inf
    on = np.flatnonzero(allowed)
    if rule.per_side:
        if not on.size:
            return null, []
        firsts = on[np.argsort(-start[on], kind="stable")[:limit]]
        lasts = on[np.argsort(-end[on], kind="stable")[:limit]]
    else:
        firsts = lasts = np.arange(len(start))
    length = lasts[None, :] - firsts[:, None] + 1
    band = (length >= 1) & (length <= max_answer_length)
    cells = np.where(band, combine.outer(start[firsts], end[lasts]), off_band)
    order = _top(cells.ravel(), limit, rule.earliest)
    rows, cols = np.unravel_index(order, cells.shape)
    scores, firsts, lasts = cells[rows, cols], firsts[rows], lasts[cols]
    # transformers' decode_spans counts position 0 in ([CLS]), and keeps cells off the band
    # (they score 0); a sum off the band is -inf, never a span.
    allowed_positions = np.concatenate([[0], on])
    keep = (np.isin(firsts, allowed_positions) & np.isin(lasts, allowed_positions)
            & (scores > -np.inf))
    return null, list(zip(scores[keep].tolist(), firsts[keep], lasts[keep]))


def search(context, windows, rule, max_answer_length, limit):
    """One question's answers over its windows by `rule`, best first, and its null score.

    windows: per window (start_logits [S], end_logits [S], allowed [S] (1 where an answer
        may start and end, and for transformers' rule also [CLS]), offsets [S, 2] (each
        position's characters), word_starts, word_ends [S] (the characters of each
        position's word, -1 for none; `word_spans`) or None, None: the tokens' own).
    limit: the best spans kept per window (and, `per_side`, the starts and ends tried).
    Returns: ([{"score", "start", "end", "answer"}], the lowest [CLS] start-and-end score).
    """
    found, null = {}, np.inf
    for start, end, allowed, offsets, word_starts, word_ends in windows:
        window_null, spans = _window_spans(rule, start, end, allowed, max_answer_length, limit)
        null = min(null, window_null)
        for score, s, e in spans:
            if word_starts is not None and word_starts[s] >= 0 and word_ends[e] >= 0:
                first, last = int(word_starts[s]), int(word_ends[e])
            else:  # [CLS], or words not asked for: the tokens' own characters
                first, last = int(offsets[s][0]), int(offsets[e][1])
            text = context[first:last]
            key = text.lower() if rule.merge_text else (first, last)
            same = found.get(key)
            if same is None:
                found[key] = {"score": score, "start": first, "end": last, "answer": text}
            elif rule.merge_text:
                same["score"] += score
            else:
                same["score"] = max(same["score"], score)
    if rule.earliest:
        return sorted(found.values(), key=lambda a: (-a["score"], a["start"], a["end"])), null
    return sorted(found.values(), key=lambda a: -a["score"]), null


# === run_squad.py ===

def _squad_window(start_logits, end_logits, window):
    allowed = np.zeros(window.sequence_length, np.int64)
    allowed[window.offset : window.offset + window.doc_length] = 1
    return start_logits, end_logits, allowed, window.token_spans, None, None


def decode_answers(start_logits, end_logits, windows, n_best=20, max_answer_length=30,
                   null_threshold=None, version_2=False):
    """The best answer of each question, over all its windows (run_squad.py's rule).

    Args:
        start_logits, end_logits: [windows, S] scores, rows in the order of `windows`.
        windows: `features.EncodedQuestions.windows`.
        n_best: start and end candidates per window (run_squad.py's `n_best_size`).
        max_answer_length: the longest answer, in wordpieces.
        null_threshold: SQuAD 2.0: the answer is "" when null score - best span score >
            `null_threshold` (run_squad.py's `null_score_diff_threshold`; default 0.0).
        version_2: consider no answer at all.
    Returns:
        {question_id: {"text", "score", "start", "end"}}, in the questions' order: `text`
        is `context[start:end]`, `score` the span's start + end logit; no answer is
        {"text": "", "start": 0, "end": 0} with the null score. With `version_2` each
        answer also has its `null_score` (min over windows of the [CLS] start + end).
    """
    check_int("n_best", n_best, 1)
    check_int("max_answer_length", max_answer_length, 1)
    start_logits = np.asarray(start_logits, np.float32)
    end_logits = np.asarray(end_logits, np.float32)
    expected = (len(windows), windows[0].sequence_length) if windows else (0,)
    if start_logits.shape[: len(expected)] != expected or end_logits.shape != start_logits.shape:
        raise ValueError(f"Expected start and end logits of shape {expected} (a row per "
                         f"window), got {start_logits.shape} and {end_logits.shape}.")
    threshold = 0.0 if null_threshold is None else float(null_threshold)
    questions = {}
    for row, window in enumerate(windows):
        questions.setdefault(window.question_id, (window.context, []))[1].append(
            _squad_window(start_logits[row], end_logits[row], window))
    answers = {}
    for qid, (context, question_windows) in questions.items():
        found, null = search(context, question_windows, RUN_SQUAD, max_answer_length, n_best)
        answer = {"text": "", "score": float("-inf"), "start": 0, "end": 0}
        if found:
            best = found[0]
            answer = {"text": best["answer"], "score": best["score"], "start": best["start"],
                      "end": best["end"]}
        if version_2:
            if not found or null - answer["score"] > threshold:
                answer = {"text": "", "score": null, "start": 0, "end": 0}
            answer["null_score"] = null
        answers[qid] = answer
    return answers


# === transformers' question-answering pipeline ===

def word_spans(words, offsets):
    """Each position's word's (first, last) characters: `words` int [S] (the word of each
    position, -1 for none), `offsets` int [S, 2] (each position's characters). Returns
    word_starts, word_ends int32 [S], -1 where `words` is. A word is the positions that
    carry its id (within a window: the part of it in the window)."""
    word_starts = np.full(len(words), -1, np.int32)
    word_ends = np.full(len(words), -1, np.int32)
    for word in np.unique(words[words >= 0]):
        tokens = np.flatnonzero(words == word)
        word_starts[tokens] = offsets[tokens[0], 0]
        word_ends[tokens] = offsets[tokens[-1], 1]
    return word_starts, word_ends


def answer(context, windows_out, top_k, handle_impossible_answer, max_answer_len,
           align_to_words):
    """One question's answers from its windows (transformers' rule; numpy / Python only).

    windows_out: per window (start_logits [S], end_logits [S], allowed [S] (1 on [CLS] and
        the context), offsets [S, 2], and word_starts, word_ends [S]: the characters of each
        token's word, -1 off the context (`word_spans`). A word cut by the window's edge is
        the part of it in the window, as transformers' `word_to_chars` of the window's
        encoding gives it.
    Returns: {"score", "start", "end", "answer"}, or a list of them, best first, when there
    are several (top_k > 1).
    """
    if not align_to_words:
        windows_out = [(*window[:4], None, None) for window in windows_out]
    pre_top_k = top_k * 2 + 10 if align_to_words else top_k
    answers, null = search(context, windows_out, TRANSFORMERS, max_answer_len, pre_top_k)
    if handle_impossible_answer:  # one more candidate, after those of its score
        answers.append({"score": null, "start": 0, "end": 0, "answer": ""})
    answers = sorted(answers, key=lambda a: a["score"], reverse=True)[:top_k]
    return answers[0] if len(answers) == 1 else answers


def tflite_answer(context, outputs, row=0, top_k=1, handle_impossible_answer=False,
                  max_answer_len=15, align_to_words=True):
    """The question-answering pipeline's answer from row `row` of a TFLite question
    answerer's outputs (`start_logits`, `end_logits`, `tokens`, `starts`, `ends`: `tflite`),
    by `answer`: on the one window the model reads, so it equals `pipe(question=...,
    context=context, ...)` when the context fits in it. Words (`align_to_words`) are
    WordPiece's: a piece and the "##" pieces after it."""
    starts = np.array([char_offset(context, b) for b in outputs["starts"][row]], np.int32)
    ends = np.array([char_offset(context, b) for b in outputs["ends"][row]], np.int32)
    allowed = (starts >= 0).astype(np.int64)
    allowed[0] = 1
    offsets = np.stack([np.maximum(starts, 0), np.maximum(ends, 0)], axis=1)
    inside = np.flatnonzero(starts >= 0)
    words = np.full(len(starts), -1, np.int64)
    words[inside] = np.cumsum([not t.startswith(b"##") for t in outputs["tokens"][row][inside]])
    word_starts, word_ends = word_spans(words, offsets)
    window = (np.asarray(outputs["start_logits"][row], np.float32),
              np.asarray(outputs["end_logits"][row], np.float32), allowed, offsets,
              word_starts, word_ends)
    return answer(context, [window], top_k, handle_impossible_answer, max_answer_len,
                  align_to_words)
