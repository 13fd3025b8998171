"""ROUGE-1, ROUGE-2 and ROUGE-L F1 of summaries, by Google's `rouge-score` (the Porter
stemmer on, as ROUGE-1.5.5 -m), averaged over the documents; and the lead-k baseline."""

import numpy as np
from rouge_score import rouge_scorer

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def scorer(types=("rouge1", "rouge2")):
    """rouge-score's scorer of `types`, with the Porter stemmer (as ROUGE-1.5.5 -m, the
    setting summarization papers report)."""
    return rouge_scorer.RougeScorer(list(types), use_stemmer=True)


def rouge_scores(predictions, references):
    """{"rouge1", "rouge2", "rougeL": mean F1} of `predictions` against `references` (equal
    lists of strings)."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references: "
                         "give one summary per reference.")
    if not references:
        raise ValueError("No summaries to score.")
    rouge = scorer(ROUGE_TYPES)
    rows = [rouge.score(reference, prediction)
            for prediction, reference in zip(predictions, references)]
    return {name: float(np.mean([row[name].fmeasure for row in rows])) for name in ROUGE_TYPES}


def lead(sentences, count=3):
    """The lead-k baseline: the first `count` sentences, joined by newlines."""
    return "\n".join(sentences[:count])
