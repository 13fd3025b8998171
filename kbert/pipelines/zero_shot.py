"""`kbert.pipeline("zero-shot-classification")`: transformers' ZeroShotClassificationPipeline
on a kbert `TextClassifier` trained on NLI: each candidate label becomes the hypothesis
"This example is {label}." of the text, and the entailment logits rank the labels (the
rules: `kbert.tasks.text_classification.decode`)."""

from kbert.pipelines.base import Pipeline
from kbert.tasks.text_classification import decode


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
    OPTIONS = {"candidate_labels": None, "hypothesis_template": decode.DEFAULT_TEMPLATE,
               "multi_label": False, "multi_class": None}

    def __init__(self, source, **options):
        super().__init__(source, **options)
        self.entailment = decode.entailment_index(source.label_names)
        self.contradiction = decode.contradiction_index(self.entailment)

    def __call__(self, sequences, *args, **options):
        if len(args) == 1 and "candidate_labels" not in options:
            options["candidate_labels"] = args[0]
        elif args:
            raise ValueError(f"Unable to understand extra arguments {args}")
        opts, _ = self.options(options)
        labels = decode.parse_labels(opts["candidate_labels"] or [])
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
        results = [decode.rank(text, labels, rows[i * len(labels):(i + 1) * len(labels)],
                               self.entailment, bool(multi_label))
                   for i, text in enumerate(texts)]
        return results[0] if isinstance(sequences, str) else results

    multi_label = staticmethod(decode.multi_label)
    _check = staticmethod(decode.check_request)
