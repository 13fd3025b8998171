"""`kbert.pipeline("text-classification")`: transformers' TextClassificationPipeline on a
kbert `TextClassifier` (single texts and `{"text", "text_pair"}` pairs); its rules (score
function, ranking) are `kbert.tasks.text_classification.decode`."""

from kbert.pipelines.base import Pipeline
from kbert.pipelines.model_source import ExitingRunner, KerasRunner
from kbert.tasks.text_classification import decode
from kbert.tasks.text_classification.early_exit import check_exit


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
        early_exit: on an `EarlyExitClassifier` (`kbert.training.early_exit`), stop running
            each text at the first exit that answers it: {"entropy": t} (its softmax's
            entropy below t nats; 0 never exits) or {"patience": p} (PABEE: the predicted
            class the same at p + 1 exits in a row). `None` (default): the full model.
        batch_size, progress: see `kbert.pipeline`.
    Returns: per text a {"label", "score"} dict, or a list of them with `top_k`.
    """

    task = "text-classification"
    OPTIONS = {"top_k": 1, "function_to_apply": None, "return_all_scores": None,
               "truncation": None, "max_length": None, "padding": None, "early_exit": None}

    def __init__(self, source, **options):
        super().__init__(source, **options)
        self._exit_runners = {}  # early_exit setting -> its runner, made once

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
        rows = self.run(sequences, opts, runner=self.exit_runner(opts["early_exit"]))
        results = [decode.classify(row, self.source.label_names, function, top_k, legacy)
                   for row in rows]
        if not isinstance(inputs, list):
            return [results[0]] if wrap else results[0]
        return results

    ranking = staticmethod(decode.ranking)

    def exit_runner(self, setting):
        """The runner of the `early_exit` option `setting` (made once per setting), or `None`
        for the source's own (no early exit)."""
        if setting is None:
            return None
        mode, value = check_exit(setting)
        runner = self.source.runner
        if not isinstance(runner, KerasRunner) or not hasattr(runner.model, "exit_early"):
            raise ValueError(f"early_exit runs the exit heads of a kbert EarlyExitClassifier "
                             f"(kbert.training.early_exit.add_exits, train_exits); "
                             f"{self.source.name} has none. Pass early_exit=None.")
        if (mode, value) not in self._exit_runners:
            self._exit_runners[mode, value] = ExitingRunner(runner.model, runner.max_length,
                                                            {mode: value})
        return self._exit_runners[mode, value]

    def function(self, opts):
        """The function `opts` name, else the one of the model's problem type."""
        return decode.function_of(opts, self.source.problem_type, len(self.source.label_names))

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
