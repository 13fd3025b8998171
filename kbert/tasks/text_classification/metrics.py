"""GLUE's metrics, from the libraries its evaluation code calls: `accuracy`, `f1_score`
(binary, macro) and `matthews_corrcoef` (CoLA) from scikit-learn, `pearson` and `spearman`
(STS-B) from scipy.stats; `glue_scores`, and `GLUE_METRICS` (the metrics of each GLUE task).

Each library call is wrapped where the library warns, raises or returns something else than
kbert has promised at the edges (constant or one-point inputs); the wrappers say why. Both
libraries are the `metrics` extra, imported on first use.
"""

import warnings

import numpy as np

from kbert import _extras

_FEATURE = "kbert.tasks.text_classification.metrics (GLUE's scores)"


def _sklearn_metrics():
    return _extras.require("sklearn.metrics", "metrics", _FEATURE)


def _stats():
    return _extras.require("scipy.stats", "metrics", _FEATURE)


def require():
    """Imports scikit-learn and scipy; an ImportError naming the extra where one is missing."""
    _sklearn_metrics()
    _stats()


def _pair(y_true, y_pred):
    y_true, y_pred = np.asarray(y_true).reshape(-1), np.asarray(y_pred).reshape(-1)
    if y_true.shape != y_pred.shape or not y_true.size:
        raise ValueError(f"Need two non-empty sequences of one length; got {y_true.size} "
                         f"labels and {y_pred.size} predictions.")
    return y_true, y_pred


def accuracy(y_true, y_pred):
    """The share of predictions equal to the labels (scikit-learn's `accuracy_score`)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return float(_sklearn_metrics().accuracy_score(y_true, y_pred))


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
        return float(_sklearn_metrics().f1_score(y_true, y_pred, labels=[pos_label],
                                                 average="macro", zero_division=0.0))
    return float(_sklearn_metrics().f1_score(y_true, y_pred, average="macro",
                                             zero_division=0.0))


def matthews_corrcoef(y_true, y_pred):
    """Matthews correlation (CoLA), scikit-learn's `matthews_corrcoef` (multiclass form);
    0.0 when undefined (one label everywhere)."""
    y_true, y_pred = _pair(y_true, y_pred)
    sklearn_metrics = _sklearn_metrics()
    with warnings.catch_warnings():
        # One label in both: scikit-learn returns the promised 0.0, after its confusion
        # matrix warns that it saw a single label, which is the case being scored here.
        warnings.filterwarnings("ignore", "A single label was found", UserWarning)
        return float(sklearn_metrics.matthews_corrcoef(y_true, y_pred))


def _correlation(name, x, y):
    x, y = _pair(x, y)
    stats = _stats()
    if x.size < 2:
        # A single point is a constant side: nan, where scipy's pearsonr raises instead.
        return float("nan")
    with warnings.catch_warnings():
        # A constant side: scipy returns the promised nan, and warns that it did.
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return float(getattr(stats, name)(x.astype("float64"), y.astype("float64")).statistic)


def pearson(x, y):
    """Pearson's r (STS-B), scipy.stats.pearsonr; nan when a side is constant."""
    return _correlation("pearsonr", x, y)


def spearman(x, y):
    """Spearman's rho (STS-B): Pearson's r of the ranks (ties get their mean rank),
    scipy.stats.spearmanr; nan when a side is constant."""
    return _correlation("spearmanr", x, y)


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
