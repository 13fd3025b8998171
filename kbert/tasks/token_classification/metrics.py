"""Token classification's metric: entity-level precision / recall / F1 from seqeval (the
numbers of its `classification_report`), in its default (conlleval) mode or its strict mode
with a tag scheme. The library call is wrapped where seqeval fails with a bare KeyError or
warns about what kbert promises (nothing predicted). seqeval is the `metrics` extra, imported
on first use."""

from kbert import _extras

# The strict-mode schemes kbert takes: classes of seqeval.scheme by these names.
_SCHEMES = ("IOB1", "IOB2", "IOE2", "IOBES", "BILOU")
_PREFIXES = "IOBESUL"  # seqeval.scheme.Prefix's one-letter members


def _seqeval(module):
    """seqeval's `module` ("scheme", "metrics.v1", ...)."""
    return _extras.require(f"seqeval.{module}", "metrics",
                           "kbert.tasks.token_classification.metrics (entity-level F1)")


def require():
    """Imports seqeval; an ImportError naming the extra where it is missing."""
    _seqeval("metrics.v1")


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
        seqeval_default = _seqeval("metrics.sequence_labeling")
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
        seqeval_strict = _seqeval("metrics.v1")

        def scores(average):
            return seqeval_strict.precision_recall_fscore_support(
                y_true, y_pred, average=average, zero_division=0, scheme=_scheme(scheme),
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
    return _seqeval("scheme").Entities(sentences, _scheme(scheme))


def _scheme(name):
    return getattr(_seqeval("scheme"), name)


def _row(precision, recall, f1, support):
    return {"precision": float(precision), "recall": float(recall), "f1": float(f1),
            "support": int(support)}
