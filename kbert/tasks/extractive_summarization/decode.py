"""Sentence scores -> the summary: the best sentences with BERTSum's trigram blocking, in
document order, as the pipeline's dicts. Shared by the pipeline and fine-tuning's scores."""

import re

import numpy as np

from kbert.tasks.datasets import check_int

# BERTSum picks 3 sentences for CNN/DailyMail.
DEFAULT_SENTENCES = 3
_WORD = re.compile(r"\w+")


def trigrams(text):
    """The word trigrams of `text` (lower-cased `\\w+` words)."""
    words = _WORD.findall(text.lower())
    return {tuple(words[i:i + 3]) for i in range(len(words) - 2)}


def select(texts, scores, count=DEFAULT_SENTENCES, trigram_blocking=True):
    """The indices, in document order, of the `count` best-scored sentences of `texts`;
    with `trigram_blocking`, a sentence sharing a word trigram with one already chosen is
    skipped (BERTSum's `_block_tri`), so fewer may come back."""
    count = check_int("count", count, 1)
    if len(texts) != len(scores):
        raise ValueError(f"{len(scores)} scores for {len(texts)} sentences.")
    chosen, seen = [], set()
    for i in np.argsort(-np.asarray(scores, np.float64), kind="stable"):
        grams = trigrams(texts[i]) if trigram_blocking else set()
        if grams & seen:
            continue
        chosen.append(int(i))
        seen |= grams
        if len(chosen) == count:
            break
    return sorted(chosen)


def summary(document, sentences, scores, count=DEFAULT_SENTENCES, trigram_blocking=True):
    """The pipeline's answer for one document: {"summary_text": the chosen sentences as they
    stand in the document, joined by a space, "sentences": [{"text", "score", "start",
    "end"}] in document order}, `text == document[start:end]`."""
    chosen = select([s.text for s in sentences], scores, count, trigram_blocking)
    parts = [{"text": document[sentences[i].start:sentences[i].end],
              "score": float(scores[i]), "start": sentences[i].start,
              "end": sentences[i].end} for i in chosen]
    return {"summary_text": " ".join(p["text"] for p in parts), "sentences": parts}


def summary_options(opts):
    """(`num_sentences`, `trigram_blocking`) of the pipeline's options, checked."""
    count = check_int("num_sentences", opts["num_sentences"], 1)
    blocking = opts["trigram_blocking"]
    if not isinstance(blocking, bool):
        raise ValueError(f"trigram_blocking must be True or False, got {blocking!r}.")
    return count, blocking
