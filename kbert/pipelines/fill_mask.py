"""`kbert.pipeline("fill-mask")`: transformers' FillMaskPipeline on a kbert model with a
masked-LM head (`BertPretrainer` and its family's, `ElectraMaskedLM`, `ElectraPretrainer`'s
generator): the likeliest tokens for each "[MASK]" of a text."""

import numpy as np

from kbert.pipelines.base import Pipeline, check_int
from kbert.tasks.fill_mask.decode import fill, target_ids


class FillMaskPipeline(Pipeline):
    """Fills the "[MASK]" tokens of texts.

    Call: `pipe("Paris is the [MASK] of France.")` -> a list of dicts (a list of such lists
    for several masks); a list of texts -> a list of those (a list of one text gives its
    result alone, as in transformers).
    Options (at construction or per call):
        top_k: tokens per mask (default 5).
        targets: a token or list of tokens to score instead of the whole vocabulary (a word
            that is no token is replaced by its first token).
        truncation: False (default: a text too long for the model is an error) or True.
        tokenizer_kwargs: transformers' tokenizer options, a dict of `truncation`,
            `max_length` (the tokens to cut to; alone, it truncates, as transformers'
            tokenizers do) and `padding` (any legal value: it changes no answer).
        batch_size, progress: see `kbert.pipeline`.
    Each dict: `score` (probability), `token` (id), `token_str`, `sequence` (the text with
    the token filled in, decoded).
    """

    task = "fill-mask"
    OPTIONS = {"top_k": 5, "targets": None, "truncation": None, "tokenizer_kwargs": None}

    def top_k_and_targets(self, opts):
        """`top_k` (checked) and the target ids (None: the whole vocabulary) of `opts`."""
        top_k = check_int("top_k", opts["top_k"], 1)
        targets = None if opts["targets"] is None else target_ids(opts["targets"],
                                                                  self.encoder)
        return top_k, targets

    def check_export(self, opts):
        model = self.source.runner.model  # a KerasRunner's: exporting checked
        if callable(getattr(model, "discriminator", None)):  # ELECTRA's, DeBERTa-v3's RTD
            raise TypeError(f"A {type(model).__name__} samples replacements in its call: "
                            "export its discriminator, kbert.export(model.discriminator(), "
                            "path, tokenizer=...) (feature extraction), as tools/pretrain.py "
                            "--export_dir does.")

    def _check_mask(self, ids, text):
        mask_id = self.tokenizer.mask_id
        if not np.any(np.asarray(ids) == mask_id):
            raise ValueError(f"No mask_token ({self.tokenizer.vocabulary[mask_id]}) found on "
                             f"the input: {text!r:.80}")

    def __call__(self, inputs, **options):
        opts, _ = self.options(options)
        top_k, targets = self.top_k_and_targets(opts)
        texts = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(texts, (list, tuple)) or not all(isinstance(t, str) for t in texts):
            raise ValueError(f"fill-mask takes a text or a list of texts; got {inputs!r:.80}.")
        truncation, max_length = self.tokenization(opts, "tokenizer_kwargs")
        mask_id = self.tokenizer.mask_id
        sequences = []
        for i, text_ids in enumerate(self.encoder.ids(list(texts), self.specials)):
            # As transformers: a text without a mask is refused before its length is (and
            # one whose masks truncation cut off, after).
            self._check_mask(text_ids, texts[i])
            ids, _ = self.fit(text_ids, None, truncation, f"Text {i}", max_length)
            sequence = self.pack(ids)
            self._check_mask(sequence.token_ids, texts[i])
            positions = np.flatnonzero(sequence.token_ids == mask_id).astype(np.int32)
            sequence.mask_positions = positions
            sequences.append(sequence)
        rows = self.run(sequences, opts)
        results = [fill(s.token_ids, s.mask_positions,
                        row["mlm_logits"][:len(s.mask_positions)], top_k, targets,
                        self.encoder, self.tokenizer.pad_id)
                   for s, row in zip(sequences, rows)]
        if isinstance(inputs, str) or len(results) == 1:
            return results[0]
        return results
