"""The official fine-tuning metrics in numpy (no TensorFlow, no scikit-learn):

- GLUE (as its evaluation code, scikit-learn and scipy): `accuracy`, `f1_score` (binary,
  macro), `matthews_corrcoef` (CoLA), `pearson` and `spearman` (STS-B); `glue_scores`.
- `entity_scores`: entity-level precision / recall / F1 as seqeval computes them.
- `squad_scores`: SQuAD v1.1 / v2.0 exact match and F1 as the official evaluate scripts.
"""

import collections
import re
import string

import numpy as np

from kbert.tasks._seqeval import entities


def _pair(y_true, y_pred):
    y_true, y_pred = np.asarray(y_true).reshape(-1), np.asarray(y_pred).reshape(-1)
    if y_true.shape != y_pred.shape or not y_true.size:
        raise ValueError(f"Need two non-empty sequences of one length; got {y_true.size} "
                         f"labels and {y_pred.size} predictions.")
    return y_true, y_pred


def accuracy(y_true, y_pred):
    """The share of predictions equal to the labels."""
    y_true, y_pred = _pair(y_true, y_pred)
    return float(np.mean(y_true == y_pred))


def _f1(tp, fp, fn):
    # scikit-learn's zero_division: 0.0 when there is nothing to divide.
    return 0.0 if 2 * tp + fp + fn == 0 else 2.0 * tp / (2 * tp + fp + fn)


def f1_score(y_true, y_pred, average="binary", pos_label=1):
    """F1 as scikit-learn: "binary" (of `pos_label`; MRPC, QQP) or "macro" (the mean over
    the labels seen in `y_true` or `y_pred`)."""
    y_true, y_pred = _pair(y_true, y_pred)
    if average == "binary":
        labels = [pos_label]
    elif average == "macro":
        labels = np.unique(np.concatenate([y_true, y_pred]))
    else:
        raise ValueError(f"Unknown average {average!r}. Allowed: 'binary', 'macro'.")
    scores = [_f1(np.sum((y_pred == c) & (y_true == c)), np.sum((y_pred == c) & (y_true != c)),
                  np.sum((y_pred != c) & (y_true == c))) for c in labels]
    return float(np.mean(scores))


def matthews_corrcoef(y_true, y_pred):
    """Matthews correlation (CoLA), scikit-learn's multiclass form; 0 when undefined."""
    y_true, y_pred = _pair(y_true, y_pred)
    labels, index = np.unique(np.concatenate([y_true, y_pred]), return_inverse=True)
    confusion = np.zeros((len(labels), len(labels)), "float64")
    np.add.at(confusion, (index[:len(y_true)], index[len(y_true):]), 1)
    t_sum, p_sum = confusion.sum(axis=1), confusion.sum(axis=0)
    n_correct, n = np.trace(confusion), confusion.sum()
    cov_ytyp = n_correct * n - t_sum @ p_sum
    cov_ypyp = n * n - p_sum @ p_sum
    cov_ytyt = n * n - t_sum @ t_sum
    if cov_ypyp * cov_ytyt == 0:
        return 0.0
    return float(cov_ytyp / np.sqrt(cov_ytyt * cov_ypyp))


def pearson(x, y):
    """Pearson's r (STS-B), as scipy.stats.pearsonr; nan when a side is constant."""
    x, y = _pair(x, y)
    x, y = x.astype("float64") - x.mean(), y.astype("float64") - y.mean()
    denominator = np.sqrt(np.sum(x * x) * np.sum(y * y))
    return float(np.sum(x * y) / denominator) if denominator else float("nan")


def _ranks(x):
    """Ranks from 1, ties get their mean rank (scipy.stats.rankdata's "average")."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)  # the highest rank of each distinct value
    return (last - (counts - 1) / 2.0)[inverse]


def spearman(x, y):
    """Spearman's rho (STS-B): Pearson's r of the ranks, as scipy.stats.spearmanr."""
    x, y = _pair(x, y)
    return pearson(_ranks(x), _ranks(y))


# GLUE task -> its metrics (the GLUE paper, Table 1).
GLUE_METRICS = {
    "cola": ("matthews_corrcoef",),
    "sst2": ("accuracy",),
    "mrpc": ("accuracy", "f1"),
    "qqp": ("accuracy", "f1"),
    "stsb": ("pearson", "spearman"),
    "mnli": ("accuracy",),
    "qnli": ("accuracy",),
    "rte": ("accuracy",),
    "wnli": ("accuracy",),
    "ax": ("matthews_corrcoef",),
}
_BY_NAME = {"accuracy": accuracy, "f1": f1_score, "matthews_corrcoef": matthews_corrcoef,
            "pearson": pearson, "spearman": spearman}


def glue_scores(task, y_true, y_pred):
    """{metric: value} of a GLUE `task` ("cola", "sst2", "stsb", "mnli", ...)."""
    task = task.lower().replace("-", "")
    if task not in GLUE_METRICS:
        raise ValueError(f"Unknown GLUE task {task!r}. Known: {', '.join(GLUE_METRICS)}.")
    return {name: _BY_NAME[name](y_true, y_pred) for name in GLUE_METRICS[task]}


# --- Entity-level scores (seqeval) -------------------------------------------------------

def entity_scores(y_true, y_pred, scheme=None):
    """Entity-level micro precision, recall and F1, and the same per entity type, exactly as
    seqeval's `classification_report` / `f1_score`.

    Args:
        y_true, y_pred: tag sequences (lists of sentences, each a list of strings like
            "B-PER"; or one flat list).
        scheme: `None`: seqeval's default (conlleval) mode, lenient: an I- tag after O or
            another type starts an entity (as in IOB1), E-/S- tags are read too.
            "IOB1", "IOB2", "IOE2", "IOBES" or "BILOU": seqeval's `mode="strict"` with that
            scheme: only well-formed entities count (in IOB2 an entity must open with B-),
            and a tag prefix outside the scheme is an error.

    Returns:
        {"precision", "recall", "f1", "support" (gold entities),
         "per_type": {type: {"precision", "recall", "f1", "support"}}}; 0.0 where a ratio
        is undefined (seqeval's zero_division="warn", without the warning).
    """
    y_true, y_pred = _sentences(y_true), _sentences(y_pred)
    if [len(s) for s in y_true] != [len(s) for s in y_pred]:
        raise ValueError("y_true and y_pred need the same number of sentences and tags.")
    gold, found = entities(y_true, scheme), entities(y_pred, scheme)
    types = sorted({e[0] for e in gold} | {e[0] for e in found})
    per_type = {t: _prf(len({e for e in gold if e[0] == t} & {e for e in found if e[0] == t}),
                        sum(e[0] == t for e in found), sum(e[0] == t for e in gold))
                for t in types}
    return {**_prf(len(gold & found), len(found), len(gold)), "per_type": per_type}


def _sentences(tags):
    tags = list(tags)
    return [list(s) for s in tags] if tags and not isinstance(tags[0], str) else [tags]


def _prf(correct, predicted, true):
    precision = correct / predicted if predicted else 0.0
    recall = correct / true if true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "support": true}


# --- SQuAD (the official evaluate-v1.1.py and evaluate-v2.0.py) --------------------------

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
