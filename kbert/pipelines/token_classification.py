"""`kbert.pipeline("token-classification")` (alias "ner"): transformers'
TokenClassificationPipeline on a kbert `TokenClassifier`: a tag per token, or entities
grouped by `aggregation_strategy`, with character offsets into the original text. The class
holds the options and runs the model; its rules (`decode`: aggregation and grouping) are
`kbert.tasks.token_classification.decode`'s."""

import numpy as np

from kbert.pipelines.base import Pipeline
from kbert.tasks.token_classification.decode import decode, strategy_and_ignored


class TokenClassificationPipeline(Pipeline):
    """Tags of the tokens of texts, or the entities they form.

    Call: `pipe("a text")` -> a list of dicts; `pipe([...])` -> a list of such lists.
    Options (at construction or per call):
        aggregation_strategy: "none" (default: one dict per token, with `entity`, `score`,
            `index` (its position in the model input), `word` (the token), `start`, `end`),
            "simple" (adjacent tokens of one type grouped, B- starts a new group),
            "first" / "average" / "max" (each word tagged by its first token, the mean of
            its tokens' scores, or its most confident token, then grouped): `entity_group`,
            `score`, `word`, `start`, `end`.
        ignore_labels: the tags left out (default ["O"]).
        batch_size, progress: see `kbert.pipeline`.
    `start` / `end` are character offsets into the text as given (`text[start:end]`).
    Texts longer than the model are cut to its `max_sequence_length`, as transformers cuts
    them to the tokenizer's `model_max_length`.
    """

    task = "token-classification"
    OPTIONS = {"aggregation_strategy": "none", "ignore_labels": None}

    def __call__(self, inputs, **options):
        opts, _ = self.options(options)
        strategy, ignore = strategy_and_ignored(opts)
        texts = [inputs] if isinstance(inputs, str) else inputs
        if isinstance(texts, (list, tuple)) and not texts:  # transformers' refusal
            raise ValueError("At least one input is required. The token-classification "
                             "pipeline takes a text or a non-empty list of texts.")
        if not isinstance(texts, (list, tuple)) or not all(isinstance(t, str) for t in texts):
            raise ValueError("The token-classification pipeline takes a text or a non-empty "
                             f"list of texts; got {inputs!r:.80}.")
        encodings = self.encoder.encode(list(texts), self.specials)
        budget = self.max_length - 2
        sequences = [self.pack(e.ids[:budget]) for e in encodings]
        rows = self.run(sequences, opts)
        results = []
        for text, encoding, sequence, row in zip(texts, encodings, sequences, rows):
            results.append(self._decode(text, encoding, sequence, row, strategy, ignore))
        return results[0] if isinstance(inputs, str) else results

    def _decode(self, text, encoding, sequence, logits, strategy, ignore):
        ids = sequence.token_ids
        count = len(ids) - 2
        offsets = np.zeros((len(ids), 2), np.int32)
        offsets[1:1 + count] = encoding.offsets[:count]
        # [CLS], [SEP] and special-token literals typed in the text are no entities.
        literal = np.concatenate([[True], encoding.words[:count] < 0, [True]])
        tokens = [None if literal[k] else self.encoder.token(i) for k, i in enumerate(ids)]
        return decode(text, tokens, [int(i) for i in ids], logits[:len(ids)], offsets,
                      self.source.label_names, strategy, ignore, self.tokenizer.unk_id,
                      self.tokenizer.continuation_prefix is not None,
                      self.encoder.tokens_to_string)
