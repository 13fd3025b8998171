"""`kbert.pipeline("feature-extraction")`: transformers' FeatureExtractionPipeline (the
backbone's last hidden states of every token, [CLS] and [SEP] included), and
`kbert.pipeline("sentence-embeddings")`: one vector per text from a kbert `TextEmbedder`,
as sentence-transformers' `encode` gives it. Their rules are in their task folders
(`kbert.tasks.feature_extraction`, `kbert.tasks.text_embedding`)."""

from kbert.pipelines.base import Pipeline
from kbert.tasks.feature_extraction.decode import hidden_states
from kbert.tasks.text_embedding.decode import embeddings


def _texts(inputs, task):
    texts = [inputs] if isinstance(inputs, str) else inputs
    if not isinstance(texts, (list, tuple)) or not all(isinstance(t, str) for t in texts):
        raise ValueError(f"The {task} pipeline takes a text or a list of texts; got "
                         f"{inputs!r:.80}.")
    return list(texts)


class FeatureExtractionPipeline(Pipeline):
    """Token features of texts: any kbert model, through its backbone.

    Call: `pipe("a text")` -> nested lists [1, tokens, hidden]; a list of texts -> a list of
    those.
    Options (at construction or per call):
        return_tensors: numpy arrays [1, tokens, hidden] instead of lists.
        truncation: False (default: a text too long for the model is an error) or True
            (cut to the model's max_sequence_length).
        tokenize_kwargs: transformers' tokenizer options, a dict of `truncation`,
            `max_length` (the tokens to cut to; alone, it truncates, as transformers'
            tokenizers do) and `padding` (any legal value: it changes no answer); a
            `truncation` given twice is an error, as in transformers.
        batch_size, progress: see `kbert.pipeline`.
    """

    task = "feature-extraction"
    OPTIONS = {"return_tensors": False, "truncation": None, "tokenize_kwargs": None}

    def __call__(self, inputs, **options):
        opts, _ = self.options(options)
        truncation, max_length = self.tokenization(opts, "tokenize_kwargs")
        texts = _texts(inputs, self.task)
        sequences = [self.pack(self.fit(ids, None, truncation, f"Text {i}", max_length)[0])
                     for i, ids in enumerate(self.encoder.ids(texts, self.specials))]
        rows = self.run(sequences, opts)
        return hidden_states([row["sequence_output"] for row in rows],
                             [len(sequence) for sequence in sequences],
                             opts["return_tensors"], isinstance(inputs, str))


class SentenceEmbeddingPipeline(Pipeline):
    """One embedding per text from a `TextEmbedder` (pooling and normalisation as trained).

    Call: `pipe("a text")` -> a list of floats [hidden]; a list of texts -> a list of those.
    Options (at construction or per call):
        return_tensors: numpy arrays instead of lists (a list of texts gives one
            [texts, hidden] array).
        truncation: True (default: cut to the model's max_sequence_length, as
            sentence-transformers does) or False (a text too long is an error).
        batch_size, progress: see `kbert.pipeline`.
    """

    task = "sentence-embeddings"
    OPTIONS = {"return_tensors": False, "truncation": True}

    def __call__(self, inputs, **options):
        opts, _ = self.options(options)
        texts = _texts(inputs, self.task)
        sequences = [self.pack(self.fit(ids, None, opts["truncation"], f"Text {i}")[0])
                     for i, ids in enumerate(self.encoder.ids(texts, self.specials))]
        rows = self.run(sequences, opts)
        return embeddings(rows, opts["return_tensors"], isinstance(inputs, str))
