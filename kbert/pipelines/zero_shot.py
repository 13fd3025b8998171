"""`kbert.pipeline("zero-shot-classification")`: transformers' ZeroShotClassificationPipeline
on a kbert `TextClassifier` trained on NLI: each candidate label becomes the hypothesis
"This example is {label}." of the text, and the entailment logits rank the labels."""

import numpy as np

from kbert.pipelines.base import Pipeline

DEFAULT_TEMPLATE = "This example is {}."


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


class ZeroShotClassificationPipeline(Pipeline):
    """Ranks candidate labels for texts with an NLI model.

    Call: `pipe(text, candidate_labels=[...])` or `pipe(text, ["a", "b"])`; text may be a
    list. `candidate_labels` may be one comma-separated string.
    Options (at construction or per call):
        candidate_labels: the labels (required).
        hypothesis_template: default "This example is {}."; must hold "{}".
        multi_label: score each label alone (entailment vs contradiction) instead of a
            softmax over the labels (default False). `multi_class` is its old name.
        batch_size, progress: see `kbert.pipeline`.
    Returns: per text {"sequence", "labels" (best first), "scores"}; a list for a list.
    The text is cut (never the hypothesis) where the pair is longer than the model.
    """

    task = "zero-shot-classification"
    OPTIONS = {"candidate_labels": None, "hypothesis_template": DEFAULT_TEMPLATE,
               "multi_label": False, "multi_class": None}

    def __init__(self, source, **options):
        super().__init__(source, **options)
        self.entailment = entailment_index(source.label_names)
        self.contradiction = contradiction_index(self.entailment)

    def __call__(self, sequences, *args, **options):
        if len(args) == 1 and "candidate_labels" not in options:
            options["candidate_labels"] = args[0]
        elif args:
            raise ValueError(f"Unable to understand extra arguments {args}")
        opts, _ = self.options(options)
        labels = parse_labels(opts["candidate_labels"] or [])
        template = opts["hypothesis_template"]
        multi_label = self.multi_label(opts)
        texts = [sequences] if isinstance(sequences, str) else sequences
        if not isinstance(texts, (list, tuple)) or not all(isinstance(t, str) for t in texts):
            raise ValueError(f"zero-shot-classification takes a text or a list of texts; got "
                             f"{sequences!r:.80}.")
        for text in texts:
            self._check(text, labels, template)
        hypotheses = [template.format(label) for label in labels]
        encoded = self.encoder.ids(list(texts) + hypotheses, self.specials)
        premises, hypothesis_ids = encoded[:len(texts)], encoded[len(texts):]
        sequences_in = []
        for i, premise in enumerate(premises):
            for hypothesis in hypothesis_ids:
                first, second = self.fit(premise, hypothesis, "only_first", f"Text {i}")
                sequences_in.append(self.pack(first, second))
        rows = self.run(sequences_in, opts)
        results = [rank(text, labels, rows[i * len(labels):(i + 1) * len(labels)],
                        self.entailment, bool(multi_label)) for i, text in enumerate(texts)]
        return results[0] if isinstance(sequences, str) else results

    @staticmethod
    def multi_label(opts):
        """`multi_label`, or `multi_class` (its old name) where given."""
        return bool(opts["multi_label"] if opts["multi_class"] is None else opts["multi_class"])

    @staticmethod
    def _check(text, labels, template):
        if not labels or not text:
            raise ValueError("You must include at least one label and at least one sequence.")
        if not isinstance(template, str) or template.format(labels[0]) == template:
            raise ValueError(
                f'The provided hypothesis_template "{template}" was not able to be formatted '
                "with the target labels. Make sure the passed template includes formatting "
                "syntax such as {} where the label should go.")
