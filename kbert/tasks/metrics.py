"""The official fine-tuning metrics, from the libraries that define them:

- GLUE (its evaluation code calls scikit-learn and scipy): `accuracy`, `f1_score` (binary,
  macro) and `matthews_corrcoef` (CoLA) from scikit-learn, `pearson` and `spearman` (STS-B)
  from scipy.stats; `glue_scores`.
- `entity_scores`: entity-level precision / recall / F1 from seqeval.
- SQuAD's exact match and F1 are question answering's
  (`kbert.tasks.question_answering.metrics`).

Each library call is wrapped where the library warns, raises or returns something else than
kbert has promised at the edges (constant or one-point inputs, nothing predicted); the
wrappers say why.
"""

import warnings

import numpy as np
import scipy.stats
from seqeval import scheme as seqeval_scheme
from seqeval.metrics import sequence_labeling as seqeval_default
from seqeval.metrics import v1 as seqeval_strict
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


# --- Entity-level scores (seqeval) -------------------------------------------------------

# The strict-mode schemes kbert takes, by name.
_SCHEMES = {"IOB1": seqeval_scheme.IOB1, "IOB2": seqeval_scheme.IOB2,
            "IOE2": seqeval_scheme.IOE2, "IOBES": seqeval_scheme.IOBES,
            "BILOU": seqeval_scheme.BILOU}
_PREFIXES = "IOBESUL"  # seqeval.scheme.Prefix's one-letter members


def entity_scores(y_true, y_pred, scheme=None):
    """Entity-level micro precision, recall and F1, and the same per entity type, from
    seqeval's `precision_recall_fscore_support` (the numbers of its `classification_report`).

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
        is undefined (seqeval's zero_division=0: its "warn" value, without the warning).
    """
    y_true, y_pred = _sentences(y_true), _sentences(y_pred)
    if [len(s) for s in y_true] != [len(s) for s in y_pred]:
        raise ValueError("y_true and y_pred need the same number of sentences and tags.")
    if scheme is None:
        types = {entity[0] for tags in (y_true, y_pred)
                 for entity in seqeval_default.get_entities(tags)}

        def scores(average):
            return seqeval_default.precision_recall_fscore_support(
                y_true, y_pred, average=average, zero_division=0)
    else:
        if scheme not in _SCHEMES:
            raise ValueError(f"Unknown tag scheme {scheme!r}. Allowed: {', '.join(_SCHEMES)}.")
        gold, found = _strict_entities(y_true, scheme), _strict_entities(y_pred, scheme)
        types = gold.unique_tags | found.unique_tags

        def scores(average):
            return seqeval_strict.precision_recall_fscore_support(
                y_true, y_pred, average=average, zero_division=0, scheme=_SCHEMES[scheme],
                entities_true=gold, entities_pred=found)
    # Per type, seqeval's rows are in the order of the sorted type names.
    per_type = {t: _row(*row) for t, row in zip(sorted(types), zip(*scores(None)))}
    return {**_row(*scores("micro")), "per_type": per_type}


def _sentences(tags):
    tags = list(tags)
    return [list(s) for s in tags] if tags and not isinstance(tags[0], str) else [tags]


def _strict_entities(sentences, scheme):
    for sentence in sentences:
        for tag in sentence:
            # seqeval's strict reader fails with a bare KeyError (IndexError for "") here.
            if not isinstance(tag, str) or tag[:1] not in _PREFIXES:
                raise ValueError(f"{tag!r} is not a tag: it must start with one of "
                                 f"{list(_PREFIXES)}.")
    return seqeval_scheme.Entities(sentences, _SCHEMES[scheme])


def _row(precision, recall, f1, support):
    return {"precision": float(precision), "recall": float(recall), "f1": float(f1),
            "support": int(support)}
