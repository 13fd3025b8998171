"""ROUGE-1, ROUGE-2 and ROUGE-L F1 of summaries, by Google's `rouge-score` (the Porter
stemmer on, as ROUGE-1.5.5 -m), averaged over the documents; and the lead-k baseline.
rouge-score (and its nltk) is the `summarization` extra, imported on first use."""

import numpy as np

from kbert import _extras

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def scorer(types=("rouge1", "rouge2")):
    """rouge-score's scorer of `types`, with the Porter stemmer (as ROUGE-1.5.5 -m, the
    setting summarization papers report)."""
    rouge_scorer = _extras.require("rouge_score.rouge_scorer", "summarization",
                                   "kbert.tasks.extractive_summarization.metrics (ROUGE)")
    return rouge_scorer.RougeScorer(list(types), use_stemmer=True)


def document_scores(predictions, references):
    """Each document's ROUGE-1/2/L F1 of its prediction against its reference (equal lists of
    strings): float [documents, 3], in `ROUGE_TYPES`' order."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references: "
                         "give one summary per reference.")
    if not references:
        raise ValueError("No summaries to score.")
    rouge = scorer(ROUGE_TYPES)
    return np.array([[score[name].fmeasure for name in ROUGE_TYPES]
                     for score in (rouge.score(reference, prediction)
                                   for prediction, reference in zip(predictions, references))])


def rouge_scores(predictions, references):
    """{"rouge1", "rouge2", "rougeL": mean F1} of `predictions` against `references` (equal
    lists of strings): the means of `document_scores`."""
    means = document_scores(predictions, references).mean(axis=0)
    return {name: float(mean) for name, mean in zip(ROUGE_TYPES, means)}


def lead(sentences, count=3):
    """The lead-k baseline: the first `count` sentences, joined by newlines."""
    return "\n".join(sentences[:count])
