"""The official fine-tuning metrics, from the libraries that define them:

- GLUE (its evaluation code calls scikit-learn and scipy): `accuracy`, `f1_score` (binary,
  macro) and `matthews_corrcoef` (CoLA) from scikit-learn, `pearson` and `spearman` (STS-B)
  from scipy.stats; `glue_scores`.
- `squad_scores`: SQuAD v1.1 / v2.0 exact match and F1 as the official evaluate scripts
  (their answer normalisation is theirs, written out here as they have it).

Each library call is wrapped where the library warns, raises or returns something else than
kbert has promised at the edges (constant or one-point inputs, nothing predicted); the
wrappers say why.
"""

import collections
import re
import string
import warnings

import numpy as np
import scipy.stats
from sklearn import metrics as sklearn_metrics


def _pair(y_true, y_pred):
    y_true, y_pred = np.asarray(y_true).reshape(-1), np.asarray(y_pred).reshape(-1)
    if y_true.shape != y_pred.shape or not y_true.size:
        raise ValueError(f"Need two non-empty sequences of one length; got {y_true.size} "
                         f"labels and {y_pred.size} predictions.")
    return y_true, y_pred


def accuracy(y_true, y_pred):
    """The share of predictions equal to the labels (scikit-learn's `accuracy_score`)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return float(sklearn_metrics.accuracy_score(y_true, y_pred))


_AVERAGES = ("binary", "macro")


def f1_score(y_true, y_pred, average="binary", pos_label=1):
    """F1 as scikit-learn's `f1_score`: "binary" (of `pos_label`; MRPC, QQP) or "macro" (the
    mean over the labels seen in `y_true` or `y_pred`); 0.0 where F1 is undefined (no
    `pos_label` in either), scikit-learn's zero_division=0."""
    y_true, y_pred = _pair(y_true, y_pred)
    if average not in _AVERAGES:
        raise ValueError(f"Unknown average {average!r}. Allowed: "
                         f"{', '.join(map(repr, _AVERAGES))}.")
    if average == "binary":
        # labels=[pos_label] with a per-label average is scikit-learn's F1 of that one label
        # against the rest: the "binary" number on two labels, and (unlike average="binary",
        # which refuses them) the same one-label F1 on more labels, as kbert has given.
        return float(sklearn_metrics.f1_score(y_true, y_pred, labels=[pos_label],
                                              average="macro", zero_division=0.0))
    return float(sklearn_metrics.f1_score(y_true, y_pred, average="macro", zero_division=0.0))


def matthews_corrcoef(y_true, y_pred):
    """Matthews correlation (CoLA), scikit-learn's `matthews_corrcoef` (multiclass form);
    0.0 when undefined (one label everywhere)."""
    y_true, y_pred = _pair(y_true, y_pred)
    with warnings.catch_warnings():
        # One label in both: scikit-learn returns the promised 0.0, after its confusion
        # matrix warns that it saw a single label, which is the case being scored here.
        warnings.filterwarnings("ignore", "A single label was found", UserWarning)
        return float(sklearn_metrics.matthews_corrcoef(y_true, y_pred))


def _correlation(function, x, y):
    x, y = _pair(x, y)
    if x.size < 2:
        # A single point is a constant side: nan, where scipy's pearsonr raises instead.
        return float("nan")
    with warnings.catch_warnings():
        # A constant side: scipy returns the promised nan, and warns that it did.
        warnings.simplefilter("ignore", scipy.stats.ConstantInputWarning)
        return float(function(x.astype("float64"), y.astype("float64")).statistic)


def pearson(x, y):
    """Pearson's r (STS-B), scipy.stats.pearsonr; nan when a side is constant."""
    return _correlation(scipy.stats.pearsonr, x, y)


def spearman(x, y):
    """Spearman's rho (STS-B): Pearson's r of the ranks (ties get their mean rank),
    scipy.stats.spearmanr; nan when a side is constant."""
    return _correlation(scipy.stats.spearmanr, x, y)


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
