"""Extractive question answering: start and end logits back to answers cut from the context
(numpy and Python only). Two span searches, for the two contracts kbert keeps:

- `decode_answers`: google-research/bert's run_squad.py (fine-tuning's scores, kbert's
  SavedModel signature). Per window, the `n_best` start and the `n_best` end pieces of its
  context (by logit), paired into spans of at most `max_answer_length` pieces and scored by
  start logit + end logit, the best `n_best` kept; over the windows of a question, each
  character span keeps its highest score and the best wins (ties: the earliest start, then
  the earliest end). The answer is the pieces' characters (`kbert.tokenizers.alignment`).
  SQuAD 2.0: the null score is the lowest [CLS] start + end logit over the windows, and the
  answer is "" when null - best > `null_threshold`.
- `answer` (with `decode_spans`): transformers' (4.57) question-answering pipeline. Per
  window, the logits become probabilities (softmax over [CLS] and the context, the rest at
  `MASKED_LOGIT`), spans score start x end probability, the `top_k` best of the whole
  [S, S] band matrix (ends before `max_answer_len` tokens) are drawn and those off the
  context dropped, each widened to whole words (`align_to_words`); over the windows, answers
  of the same lower-cased text are merged into the first with their scores added, and the
  null answer (the lowest [CLS] start x end probability over the windows) is one more
  candidate ranked with the others, with no threshold.

They differ in substance, not in options: the score (a sum of raw logits, comparable across
windows, against a product of per-window probabilities), the candidates (n_best starts x
n_best ends against the best cells of the full matrix), the merge over windows (the best
score of one character span against the sum over one lower-cased text), "no answer" (a
thresholded verdict against a ranked candidate) and the characters (pieces against words).
Within one window the two rank spans alike (a product of softmaxes is monotone in the sum
of logits), and both take their windows from `features.window_starts`. Each is written once
here: the SavedModels' graphs (`serving.py`, `pipeline_serving.py`) follow these rules in
TensorFlow ops, and the host side of a TFLite answerer (`kbert.pipelines.tflite_entities
.answer`) calls `answer` itself on the one window the model reads.
"""

import numpy as np

from kbert.tasks.datasets import check_int
from kbert.tasks.text_classification.decode import softmax

# The logit of a position no answer may start or end on, before transformers' softmax.
MASKED_LOGIT = -10000.0


# === run_squad.py ===

def _window_candidates(start_logits, end_logits, window, n_best, max_answer_length):
    """[(score, char_start, char_end)] of the window's best spans (at most n_best)."""
    lo, count = window.offset, window.doc_length
    if count == 0:
        return []
    starts = start_logits[lo : lo + count]
    ends = end_logits[lo : lo + count]
    k = min(n_best, count)
    top_starts = np.argsort(-starts, kind="stable")[:k]
    top_ends = np.argsort(-ends, kind="stable")[:k]
    length = top_ends[None, :] - top_starts[:, None] + 1
    valid = (length >= 1) & (length <= max_answer_length)
    scores = starts[top_starts][:, None] + ends[top_ends][None, :]
    i, j = np.nonzero(valid)
    order = np.argsort(-scores[i, j], kind="stable")[:n_best]
    spans = window.piece_spans
    return [(float(scores[i[o], j[o]]),
             int(spans[window.doc_start + top_starts[i[o]], 0]),
             int(spans[window.doc_start + top_ends[j[o]], 1])) for o in order]


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
    candidates, nulls, contexts = {}, {}, {}
    for row, window in enumerate(windows):
        qid = window.question_id
        contexts[qid] = window.context
        found = candidates.setdefault(qid, {})
        for score, start, end in _window_candidates(start_logits[row], end_logits[row], window,
                                                    n_best, max_answer_length):
            if score > found.get((start, end), -np.inf):
                found[(start, end)] = score
        null = float(start_logits[row, 0] + end_logits[row, 0])
        nulls[qid] = min(nulls.get(qid, np.inf), null)
    answers = {}
    for qid, found in candidates.items():
        answer = {"text": "", "score": float("-inf"), "start": 0, "end": 0}
        if found:
            # The highest score; on ties the earliest, shortest span.
            (start, end), score = max(found.items(), key=lambda kv: (kv[1], -kv[0][0],
                                                                     -kv[0][1]))
            answer = {"text": contexts[qid][start:end], "score": score, "start": start,
                      "end": end}
        if version_2:
            if not found or nulls[qid] - answer["score"] > threshold:
                answer = {"text": "", "score": nulls[qid], "start": 0, "end": 0}
            answer["null_score"] = nulls[qid]
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
    """One question's answers from its windows (transformers' rule; numpy / Python only).

    windows_out: per window (start_logits [S], end_logits [S], allowed [S] (1 on [CLS] and
        the context), offsets [S, 2], and word_starts, word_ends [S]: the characters of each
        token's word, -1 off the context (`word_spans`). A word cut by the window's edge is
        the part of it in the window, as transformers' `word_to_chars` of the window's
        encoding gives it.
    Returns: {"score", "start", "end", "answer"}, or a list of them, best first, when there
    are several (top_k > 1).
    """
    null_score, answers = 1000000.0, []
    pre_top_k = top_k * 2 + 10 if align_to_words else top_k
    for start, end, allowed, offsets, word_starts, word_ends in windows_out:
        start = softmax(np.where(allowed == 0, MASKED_LOGIT, start).astype(np.float32))
        end = softmax(np.where(allowed == 0, MASKED_LOGIT, end).astype(np.float32))
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
