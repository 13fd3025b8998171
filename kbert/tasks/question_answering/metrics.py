"""SQuAD v1.1 / v2.0 exact match and F1 as the official evaluate scripts (evaluate-v1.1.py,
evaluate-v2.0.py): their answer normalisation is theirs, written out here as they have it.
"""

import collections
import re
import string

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)
VERSIONS = ("v1.1", "v2.0")


def normalize_answer(text):
    """Lower case, ASCII punctuation and the articles a/an/the removed, whitespace collapsed."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _exact(prediction, gold):
    return float(normalize_answer(prediction) == normalize_answer(gold))


def _token_f1(prediction, gold, version):
    predicted, expected = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if version == "v2.0" and (not predicted or not expected):
        return float(predicted == expected)  # v2: "" matches an unanswerable question
    same = sum((collections.Counter(predicted) & collections.Counter(expected)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def _golds(answers, version):
    answers = [answers] if isinstance(answers, str) else list(answers)
    if version == "v2.0":
        # evaluate-v2.0.py drops answers that normalize to "", and an unanswerable question
        # (no answer left) has the gold answer "".
        answers = [a for a in answers if normalize_answer(a)] or [""]
    elif not answers:
        raise ValueError("SQuAD v1.1 questions all have an answer; got none.")
    return answers


def squad_exact_match(prediction, answers, version="v1.1"):
    """1.0 if `prediction` equals one of the gold `answers` after normalization, else 0.0."""
    _check_version(version)
    return max(_exact(prediction, gold) for gold in _golds(answers, version))


def squad_f1(prediction, answers, version="v1.1"):
    """The best token-overlap F1 of `prediction` against the gold `answers`."""
    _check_version(version)
    return max(_token_f1(prediction, gold, version) for gold in _golds(answers, version))


def squad_scores(predictions, references, version="v1.1"):
    """{"exact_match", "f1"} in percent, averaged over the questions, as the official script.

    Args:
        predictions: {question id: answer text} ("" for no answer, with v2.0).
        references: {question id: list of gold answer texts} (empty: unanswerable, v2.0).
            v1.1: a question without a prediction scores 0 (the script warns and does the
            same); v2.0 needs a prediction for every question.
        version: "v1.1" or "v2.0".
    """
    _check_version(version)
    if not references:
        raise ValueError("No questions to score.")
    missing = [q for q in references if q not in predictions]
    if version == "v2.0" and missing:
        # evaluate-v2.0.py fails on them in its HasAns / NoAns split; "" means no answer.
        raise ValueError(f"No prediction for {len(missing)} questions, e.g. {missing[:3]}.")
    exact = [squad_exact_match(predictions[q], a, version) if q in predictions else 0.0
             for q, a in references.items()]
    f1 = [squad_f1(predictions[q], a, version) if q in predictions else 0.0
          for q, a in references.items()]
    return {"exact_match": 100.0 * float(np.mean(exact)), "f1": 100.0 * float(np.mean(f1))}


def _check_version(version):
    if version not in VERSIONS:
        raise ValueError(f"Unknown SQuAD version {version!r}. Allowed: {', '.join(VERSIONS)}.")
