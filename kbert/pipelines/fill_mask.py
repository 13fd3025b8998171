"""`kbert.pipeline("fill-mask")`: transformers' FillMaskPipeline on a kbert model with a
masked-LM head (`BertPretrainer` and its family's, `ElectraMaskedLM`, `ElectraPretrainer`'s
generator): the likeliest tokens for each "[MASK]" of a text."""

import numpy as np

from kbert.pipelines.base import Pipeline, check_int
from kbert.tasks.text_classification.decode import softmax


def target_ids(targets, encoder):
    """transformers' `get_target_ids`: each target's id, or where it is no token of the
    vocabulary the first token it splits into (one that gives none is dropped)."""
    if isinstance(targets, str):
        targets = [targets]
    index = {token: i for i, token in enumerate(encoder.vocabulary)}
    ids = []
    for target in targets:
        if target in index:
            ids.append(index[target])
            continue
        pieces = encoder.ids([target])[0]
        if len(pieces):
            ids.append(int(pieces[0]))
    ids = list(set(ids))  # transformers' order, which the ties of equal scores follow
    if not ids:
        raise ValueError("At least one target must be provided when passed.")
    return np.array(ids)


def fill(token_ids, mask_positions, logits, top_k, targets, encoder, pad_id):
    """One text's masked-LM logits [masks, vocabulary] -> per mask the `top_k` tokens:
    {"score", "token", "token_str", "sequence"} (numpy / Python only)."""
    probabilities = softmax(np.asarray(logits, np.float32))
    if targets is not None:
        probabilities = probabilities[..., targets]
        top_k = min(top_k, len(targets))
    single = len(mask_positions) == 1
    result = []
    for position, row in zip(mask_positions, probabilities):
        best = np.argsort(-row, kind="stable")[:top_k]
        options = []
        for p in best:
            token = int(targets[p]) if targets is not None else int(p)
            tokens = np.array(token_ids)
            tokens[position] = token
            tokens = tokens[tokens != pad_id]
            options.append({"score": float(row[p]), "token": token,
                            "token_str": encoder.decode([token]),
                            "sequence": encoder.decode(tokens, skip_special_tokens=single)})
        result.append(options)
    return result[0] if single else result


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
