"""Fill-mask's predictions back to text, as transformers' FillMaskPipeline gives them: the
target tokens (`target_ids`), the candidates per mask (`candidates`: `top_k` within the targets
and the vocabulary) and each mask's likeliest tokens with the text they fill in (`fill`).

The rules on options are the ones the graph exports call too (`pipeline_serving`, `tflite`);
`fill` is numpy, written in TensorFlow ops in those graphs (the export tests hold them equal).
"""

import numpy as np

from kbert.tasks.text_classification.decode import softmax


def candidates(top_k, targets, vocabulary_size):
    """The tokens scored per mask: `top_k`, at most the targets (None: every token) and the
    vocabulary."""
    if targets is not None:
        top_k = min(top_k, len(targets))
    return min(top_k, vocabulary_size)


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
    top_k = candidates(top_k, targets, probabilities.shape[-1])
    if targets is not None:
        probabilities = probabilities[..., targets]
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
