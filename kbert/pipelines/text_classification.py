"""`kbert.pipeline("text-classification")`: transformers' TextClassificationPipeline on a
kbert `TextClassifier` (single texts and `{"text", "text_pair"}` pairs)."""

import numpy as np

from kbert.pipelines.base import Pipeline

FUNCTIONS = ("softmax", "sigmoid", "none")


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


def apply(function, logits):
    if function == "softmax":
        return softmax(logits)
    if function == "sigmoid":
        return sigmoid(logits)
    return logits


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


class TextClassificationPipeline(Pipeline):
    """Labels and scores of texts or text pairs.

    Call: `pipe("a text")`, `pipe({"text": a, "text_pair": b})`, or a list of these.
    Options (at construction or per call):
        top_k: labels per text, best first (None: all). Not given: the best label alone,
            and a single text gets a list of one dict (transformers' legacy form).
        function_to_apply: "softmax", "sigmoid" or "none"; default: from the model's
            problem type (none for regression, sigmoid for multi-label or one output).
        return_all_scores: deprecated in transformers (top_k=None): every label in label
            order.
        truncation, max_length, padding: transformers' tokenizer options. truncation:
            False (default: a text too long for the model is an error), True or
            "longest_first", "only_first", "only_second"; max_length: the tokens to cut to
            (default: the model's; given without truncation it truncates "longest_first",
            as transformers' tokenizers do); padding: any of transformers' values, which
            change no answer (batches are padded and masked).
        batch_size, progress: see `kbert.pipeline`.
    Returns: per text a {"label", "score"} dict, or a list of them with `top_k`.
    """

    task = "text-classification"
    OPTIONS = {"top_k": 1, "function_to_apply": None, "return_all_scores": None,
               "truncation": None, "max_length": None, "padding": None}

    def __call__(self, inputs, **options):
        wrap = isinstance(inputs, str) and "top_k" not in options
        opts, given = self.options(options)
        top_k, legacy = self.ranking(opts, given)
        function = self.function(opts)
        truncation, max_length = self.tokenization(opts)
        items = inputs if isinstance(inputs, list) else [inputs]
        texts, pairs = zip(*[self._parts(item) for item in items]) if items else ((), ())
        encoded = self._encode(list(texts) + [p for p in pairs if p is not None])
        firsts, seconds = encoded[:len(texts)], iter(encoded[len(texts):])
        sequences = []
        for i, (first, pair) in enumerate(zip(firsts, pairs)):
            second = next(seconds) if pair is not None else None
            first, second = self.fit(first, second, truncation, f"Text {i}", max_length)
            sequences.append(self.pack(first, second))
        rows = self.run(sequences, opts)
        results = [classify(row, self.source.label_names, function, top_k, legacy)
                   for row in rows]
        if not isinstance(inputs, list):
            return [results[0]] if wrap else results[0]
        return results

    @staticmethod
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

    def function(self, opts):
        """The function `opts` name, else the one of the model's problem type."""
        return check_function(opts["function_to_apply"]) or default_function(
            self.source.problem_type, len(self.source.label_names))

    @staticmethod
    def _parts(item):
        if isinstance(item, str):
            return item, None
        if isinstance(item, dict) and set(item) <= {"text", "text_pair"} and "text" in item \
                and all(isinstance(v, str) for v in item.values()):
            return item["text"], item.get("text_pair")
        raise ValueError(
            f"The text-classification pipeline takes a text, a dict "
            f'{{"text": ..., "text_pair": ...}} for a pair, or a list of these; got '
            f"{item!r:.80}.")

    def _encode(self, texts):
        return self.encoder.ids(texts, self.specials)
