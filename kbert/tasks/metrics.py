"""The official fine-tuning metrics, from the libraries that define them (GLUE's:
`kbert.tasks.text_classification.metrics`):

- `entity_scores`: entity-level precision / recall / F1 from seqeval.
- `squad_scores`: SQuAD v1.1 / v2.0 exact match and F1 as the official evaluate scripts
  (their answer normalisation is theirs, written out here as they have it).

Each library call is wrapped where the library warns, raises or returns something else than
kbert has promised at the edges (constant or one-point inputs, nothing predicted); the
wrappers say why.
"""

import collections
import re
import string

import numpy as np
from seqeval import scheme as seqeval_scheme
from seqeval.metrics import sequence_labeling as seqeval_default
from seqeval.metrics import v1 as seqeval_strict


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
