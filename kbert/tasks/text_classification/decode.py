"""Text classification's predictions back to labels, as transformers' pipelines give them:
the score function (`function_to_apply`: softmax, sigmoid or none, and its default from the
problem type), the ranking options (`top_k`, the legacy form, `return_all_scores`), and
zero-shot classification's rules (the entailment class, the hypotheses, the scores of
entailment).

The rules on options are the ones the graph exports call too (`pipeline_serving`, `tflite`); the score
arithmetic here is numpy, written in TensorFlow ops in those graphs (the export tests hold them
equal)."""

import string

import numpy as np

FUNCTIONS = ("softmax", "sigmoid", "none")
DEFAULT_TEMPLATE = "This example is {}."


def softmax(x):
    shifted = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def default_function(problem_type, num_labels):
    """transformers' choice: none for regression, a sigmoid per class for multi-label (or a
    single output), else softmax."""
    if problem_type == "regression":
        return "none"
    if problem_type == "multi_label" or num_labels == 1:
        return "sigmoid"
    return "softmax"


def check_function(function):
    if function is None:
        return None
    if not isinstance(function, str) or function.lower() not in FUNCTIONS:
        raise ValueError(f"Unknown function_to_apply {function!r}. Allowed: "
                         f"{', '.join(FUNCTIONS)} (or None: from the problem type).")
    return function.lower()


def function_of(opts, problem_type, num_labels):
    """The function `opts["function_to_apply"]` names, else the one of the problem type."""
    return check_function(opts["function_to_apply"]) or default_function(problem_type,
                                                                         num_labels)


def apply(function, logits):
    if function == "softmax":
        return softmax(logits)
    if function == "sigmoid":
        return sigmoid(logits)
    return logits


def ranking(opts, given):
    """(`top_k`, `legacy`): the labels per text (None: all), and whether `top_k` was not
    given (transformers' legacy form; `return_all_scores` then picks all or one)."""
    legacy = "top_k" not in given
    top_k = opts["top_k"]
    if legacy and given.get("return_all_scores") is not None:
        top_k = None if given["return_all_scores"] else 1
    if top_k is not None and not legacy:
        top_k = int(top_k)
    return top_k, legacy


def ranked_count(top_k, legacy, num_labels):
    """(count, order) of a graph's answer: the labels it returns per text, and whether best
    first (else label order: `return_all_scores`, the legacy form without `top_k`)."""
    count = num_labels if top_k is None else min(int(top_k), num_labels)
    return count, not (legacy and top_k is None)


def classify(logits, label_names, function, top_k, legacy):
    """One text's logits [N] -> transformers' output: with `legacy` (no `top_k` given) and
    top_k 1, the best {"label", "score"}; else a {"label", "score"} per label, best first
    unless legacy, the first `top_k` (None: all)."""
    scores = apply(function, np.asarray(logits, np.float32))
    if top_k == 1 and legacy:
        best = int(scores.argmax())
        return {"label": label_names[best], "score": float(scores[best])}
    out = [{"label": label_names[i], "score": float(s)} for i, s in enumerate(scores)]
    if not legacy:
        out.sort(key=lambda x: x["score"], reverse=True)
        if top_k is not None:
            out = out[:top_k]
    return out


# --- Zero-shot classification (an NLI model) ---------------------------------------------

def entailment_index(label_names):
    """The class whose name starts with "entail" (any case), as transformers finds it."""
    for i, name in enumerate(label_names or ()):
        if name.lower().startswith("entail"):
            return i
    raise ValueError(
        f"zero-shot-classification needs an NLI classifier with an entailment class; none "
        f"of its labels {label_names} starts with 'entail'. Give the model label_names "
        "such as ['contradiction', 'neutral', 'entailment'].")


def contradiction_index(entailment):
    """The class scored against entailment for a label alone, as transformers picks it."""
    return -1 if entailment == 0 else 0


def parse_labels(labels):
    if isinstance(labels, str):
        return [label.strip() for label in labels.split(",") if label.strip()]
    return list(labels)


def multi_label(opts):
    """`multi_label`, or `multi_class` (its old name) where given."""
    return bool(opts["multi_label"] if opts["multi_class"] is None else opts["multi_class"])


def check_request(text, labels, template):
    """transformers' errors for a zero-shot call without a label or a text, or with a
    template that has no place for the label."""
    if not labels or not text:
        raise ValueError("You must include at least one label and at least one sequence.")
    if not isinstance(template, str) or template.format(labels[0]) == template:
        raise ValueError(
            f'The provided hypothesis_template "{template}" was not able to be formatted '
            "with the target labels. Make sure the passed template includes formatting "
            "syntax such as {} where the label should go.")


def template_parts(template):
    """(prefix, suffix) with `template.format(label) == prefix + label + suffix`: the
    hypotheses of labels known only in a graph (`pipeline.export`) or fixed at export
    (TFLite)."""
    fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None] \
        if isinstance(template, str) else []
    if len(fields) != 1 or fields[0] not in ("", "0"):
        raise ValueError(
            f'The provided hypothesis_template "{template}" was not able to be formatted '
            "with the target labels: an export needs exactly one {} where the label goes.")
    mark = "\x00label\x00"
    prefix, suffix = template.format(mark).split(mark)
    return prefix, suffix


def rank(sequence, labels, logits, entailment, multi_label):
    """One text's logits [labels, classes] -> {"sequence", "labels", "scores"}, best first:
    a softmax of the entailment logits over the labels, or (multi_label, or one label) of
    entailment against contradiction for each label alone."""
    logits = np.asarray(logits, np.float32)[None]  # [1, labels, classes]
    if multi_label or len(labels) == 1:
        contradiction = contradiction_index(entailment)
        pair = logits[..., [contradiction, entailment]]
        scores = (np.exp(pair) / np.exp(pair).sum(-1, keepdims=True))[..., 1]
    else:
        entail = logits[..., entailment]
        scores = np.exp(entail) / np.exp(entail).sum(-1, keepdims=True)
    order = list(reversed(scores[0].argsort()))
    return {"sequence": sequence, "labels": [labels[i] for i in order],
            "scores": scores[0, order].tolist()}
