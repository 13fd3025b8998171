"""`kbert.pipeline("summarization")`: extractive summaries from a kbert
`ExtractiveSummarizer` (BERTSum), called as transformers' SummarizationPipeline is called.
The layout is `kbert.tasks.extractive_summarization.features`' and the choice of sentences
its `decode`'s; this class takes the options and runs the model."""

import numpy as np

from kbert.pipelines.base import Pipeline
from kbert.pipelines.batching import Sequence
from kbert.tasks.extractive_summarization.data import sentences_of
from kbert.tasks.extractive_summarization.decode import (
    DEFAULT_SENTENCES,
    summary,
    summary_options,
)
from kbert.tasks.extractive_summarization.features import document_windows


class _Document:
    def __init__(self, text):
        self.sentences = sentences_of(text)


class SummarizationPipeline(Pipeline):
    """The best sentences of documents, in document order.

    Call: `pipe("a document")` -> `[{"summary_text": ..., "sentences": [...]}]` (a list of
    one dict, as transformers' summarization pipeline answers); `pipe([...])` -> a list of
    such lists.
    Options (at construction or per call):
        num_sentences: the most sentences in a summary (default 3, BERTSum's).
        trigram_blocking: skip a sentence that shares a word trigram with one already chosen
            (default True, BERTSum's).
        batch_size, progress: see `kbert.pipeline`.
    Each answer: `summary_text` (the chosen sentences as they stand in the document, joined
    by a space) and `sentences`: per chosen sentence `text`, `score` (the model's sigmoid
    probability) and `start` / `end`, character offsets into the document
    (`document[start:end] == text`). Sentences are the pretraining splitter's
    (`kbert.data.corpora.split_sentences`). A document longer than the model is scored as
    the model's `windows` setting says: "first", its sentences that fit in the model's
    length alone (the others are never chosen), or "all", windows of whole sentences, so
    that every sentence can be chosen; its segment ids alternate as its `segments` setting
    says (by sentence or by paragraph).
    """

    task = "summarization"
    OPTIONS = {"num_sentences": DEFAULT_SENTENCES, "trigram_blocking": True}

    def __call__(self, inputs, **options):
        opts, _ = self.options(options)
        count, blocking = summary_options(opts)
        texts = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(texts, (list, tuple)) or not texts or not all(
                isinstance(t, str) for t in texts):
            raise ValueError("The summarization pipeline takes a document or a non-empty list "
                             f"of documents; got {inputs!r:.80}.")
        documents = [_Document(text) for text in texts]
        # The summarizer's settings (kbert.tasks.ExtractiveSummarizer, or its SavedModel's).
        which = self.source.windows or "all"
        windows = document_windows(documents, self.tokenizer, self.max_length, which,
                                   self.source.segments or "sentence")
        sequences = [Sequence(w.token_ids, w.segment_ids) for ws in windows for w in ws]
        rows = iter(self.run(sequences, opts))
        results = []
        for text, document, parts in zip(texts, documents, windows):
            logits = [row[w.positions] for w, row in zip(parts, rows)]
            scores = [s for chunk in logits for s in 1.0 / (1.0 + np.exp(-chunk))]
            # The scored sentences: the first ones (all unless the windows are "first").
            results.append([summary(text, document.sentences[:len(scores)], scores, count,
                                    blocking)])
        return results[0] if isinstance(inputs, str) else results
