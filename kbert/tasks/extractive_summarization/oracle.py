"""Training labels of extractive summarization: BERTSum's greedy oracle (Liu 2019,
`greedy_selection` of PreSumm's data builder), with Google's `rouge-score` for ROUGE.

Starting from nothing, each step adds the sentence that most raises ROUGE-1 F + ROUGE-2 F of
the chosen sentences (joined in document order) against the reference summary; it stops when
no sentence raises it, or at `size` sentences.
"""

import numpy as np

from kbert.tasks.extractive_summarization.metrics import scorer

# BERTSum's oracle summaries are at most 3 sentences (CNN/DailyMail's highlights are ~3.6).
ORACLE_SIZE = 3


def greedy_oracle(sentences, reference, size=ORACLE_SIZE, rouge=None):
    """The indices (ascending) of the sentences the greedy oracle picks.

    Args:
        sentences: the document's sentences (strings).
        reference: the reference summary (a string).
        size: the most sentences to pick (an integer >= 1).
        rouge: a rouge-score scorer of rouge1 and rouge2 (default: `scorer()`); pass one
            to reuse it over many documents.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"`size` must be an integer >= 1, got {size!r}.")
    rouge = rouge or scorer()
    chosen, best = [], 0.0
    for _ in range(min(size, len(sentences))):
        step_best, step_pick = best, None
        for i in range(len(sentences)):
            if i in chosen:
                continue
            summary = "\n".join(sentences[j] for j in sorted(chosen + [i]))
            scores = rouge.score(reference, summary)
            value = scores["rouge1"].fmeasure + scores["rouge2"].fmeasure
            if value > step_best:
                step_best, step_pick = value, i
        if step_pick is None:
            break
        chosen.append(step_pick)
        best = step_best
    return sorted(chosen)


LABELS = ("oracle", "rouge")


def sentence_rouge(sentences, reference, rouge=None):
    """Soft labels: each sentence's ROUGE-1 F + ROUGE-2 F alone against the reference,
    divided by the document's highest (float32 [sentences] in [0, 1]; all 0 where no
    sentence shares a word with the reference). Every sentence gets a graded target, where
    the oracle's labels mark about 3 of a document's sentences and leave the rest at 0."""
    rouge = rouge or scorer()
    values = []
    for sentence in sentences:
        scores = rouge.score(reference, sentence)
        values.append(scores["rouge1"].fmeasure + scores["rouge2"].fmeasure)
    values = np.asarray(values, np.float32)
    top = float(values.max()) if len(values) else 0.0
    return values / top if top > 0 else values
