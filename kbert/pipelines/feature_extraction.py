"""`kbert.pipeline("feature-extraction")`: transformers' FeatureExtractionPipeline (the
backbone's last hidden states of every token, [CLS] and [SEP] included), and
`kbert.pipeline("sentence-embeddings")`: one vector per text from a kbert `TextEmbedder`,
as sentence-transformers' `encode` gives it. Their rules are in their task folders
(`kbert.tasks.feature_extraction`, `kbert.tasks.text_embedding`)."""

import numpy as np

from kbert.pipelines.base import Pipeline
from kbert.pipelines.model_source import KerasRunner, _numpy
from kbert.tasks.feature_extraction.decode import INTERNALS, hidden_states, with_internals
from kbert.tasks.text_embedding.decode import embeddings


def _texts(inputs, task):
    texts = [inputs] if isinstance(inputs, str) else inputs
    if not isinstance(texts, (list, tuple)) or not all(isinstance(t, str) for t in texts):
        raise ValueError(f"The {task} pipeline takes a text or a list of texts; got "
                         f"{inputs!r:.80}.")
    return list(texts)


class InternalsRunner(KerasRunner):
    """`KerasRunner` of a backbone's `with_internals` model: its per-layer lists stacked
    batch first ([B, layers + 1, S, H], [B, layers, heads, S, S]). Not compiled with XLA
    (`jit_compile=True` is refused with the internals)."""

    compiled = None
    not_compiled = ("output_hidden_states / output_attentions run the model with its "
                    "internals, which it does not compile")

    def __call__(self, features):
        outputs = self._call({name: features[name] for name in self.input_names})
        return {name: (np.stack([_numpy(x) for x in value], 1)
                       if isinstance(value, (list, tuple)) else _numpy(value))
                for name, value in outputs.items()}


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
        output_hidden_states, output_attentions: transformers' model options of those
            names (its pipeline keeps only the last hidden state; kbert's gives them): each
            text's answer becomes a dict of `last_hidden_state` (the answer above),
            `hidden_states` (the embeddings' output, then each layer's: layers + 1 of [1,
            tokens, hidden]) and / or `attentions` (each layer's probabilities: layers of [1,
            heads, tokens, tokens]), from `Backbone.with_internals`. Not in exports, nor on
            a SavedModel.
        batch_size, progress: see `kbert.pipeline`.
    """

    task = "feature-extraction"
    OPTIONS = {"return_tensors": False, "truncation": None, "tokenize_kwargs": None,
               "output_hidden_states": False, "output_attentions": False}

    def __init__(self, source, **options):
        super().__init__(source, **options)
        self._runners = {}
        self.internals(self.options({})[0])  # a SavedModel asked for them: refused now

    def internals(self, opts):
        """(hidden_states, attentions) that `opts` ask for, or None; their runner made once."""
        asked = tuple(bool(opts[f"output_{name}"]) for name in INTERNALS)
        if not any(asked):
            return None
        runner = self.source.runner
        if not (isinstance(runner, KerasRunner) and hasattr(runner.model, "with_internals")):
            raise ValueError(f"output_hidden_states / output_attentions need a kbert model "
                             f"whose layers the pipeline runs on TensorFlow; it runs "
                             f"{self.source.name}, whose graph returns its outputs alone "
                             f"(an export's signatures, or the model converted to ONNX).")
        if asked not in self._runners:
            self._runners[asked] = InternalsRunner(runner.model.with_internals(*asked))
        return asked

    def __call__(self, inputs, **options):
        opts, _ = self.options(options)
        truncation, max_length = self.tokenization(opts, "tokenize_kwargs")
        texts = _texts(inputs, self.task)
        sequences = [self.pack(self.fit(ids, None, truncation, f"Text {i}", max_length)[0])
                     for i, ids in enumerate(self.encoder.ids(texts, self.specials))]
        asked = self.internals(opts)
        if asked is not None:
            rows = self.run(sequences, opts, self._runners[asked])
            return with_internals(rows, [len(sequence) for sequence in sequences],
                                  opts["return_tensors"], isinstance(inputs, str))
        rows = self.run(sequences, opts)
        return hidden_states([row["sequence_output"] for row in rows],
                             [len(sequence) for sequence in sequences],
                             opts["return_tensors"], isinstance(inputs, str))

    def check_export(self, opts):
        if self.internals(opts) is not None:
            raise ValueError("An export of feature extraction writes the last hidden states "
                             "only: pass output_hidden_states=False and "
                             "output_attentions=False.")


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
