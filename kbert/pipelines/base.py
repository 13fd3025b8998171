"""What every pipeline shares: options given at construction or per call, packing token ids
into model inputs (with transformers' truncation rules), and the batched model run.

A pipeline is three steps, kept apart so that the first and last can later move into a
graph (`pipeline.export`): texts -> `batching.Sequence`s (tokenization, in
`kbert.tokenizers.encoding`), the model on length-grouped batches (`batching.run`), and
numpy post-processing of each sequence's output arrays into transformers' dicts.
"""

import numpy as np

from kbert.data import task_features
from kbert.data.task_features import check_int  # noqa: F401 - the pipelines' check too
from kbert.pipelines import batching
from kbert.tokenizers.encoding import Encoder

# Options every pipeline takes, at construction and per call.
RUN_OPTIONS = {"batch_size": batching.DEFAULT_BATCH_SIZE, "progress": None}


class InputTooLongError(ValueError):
    """An input does not fit the model and the pipeline was asked not to truncate it."""


def longest_first(first, second, budget):
    """Lengths of a pair cut to `budget` tokens by the tokenizers library's "longest_first"
    (the shorter is kept whole when it takes at most half the budget; else both get half,
    the longer one the odd token)."""
    if first + second <= budget:
        return first, second
    swap = first > second
    short, long = (second, first) if swap else (first, second)
    long = short if short > budget else max(short, budget - short)
    if short + long > budget:
        short, long = budget // 2, budget // 2 + budget % 2
    return (long, short) if swap else (short, long)


class Pipeline:
    """Base of the task pipelines. Subclasses set `task`, `OPTIONS` ({name: default}) and
    implement `__call__`."""

    task = None
    OPTIONS = {}

    def __init__(self, source, **options):
        source.check_serves(self.task)
        self.source = source
        self.tokenizer = source.tokenizer
        self.encoder = Encoder(source.tokenizer)
        self.max_length = source.max_length
        self._defaults = self._checked(options)
        # Special-token literals typed in a text are those tokens, as in transformers.
        self.specials = {self.tokenizer.vocabulary[i]: int(i)
                         for i in self.tokenizer.special_ids}

    def _checked(self, options):
        allowed = {**RUN_OPTIONS, **self.OPTIONS}
        unknown = sorted(set(options) - set(allowed))
        if unknown:
            raise TypeError(f"The {self.task} pipeline takes no option "
                            f"{', '.join(map(repr, unknown))}; its options: "
                            f"{', '.join(sorted(allowed))}.")
        return dict(options)

    def options(self, call_options):
        """Construction options overridden by the call's, and the defaults for the rest."""
        given = {**self._defaults, **self._checked(call_options)}
        return {name: given.get(name, default)
                for name, default in {**RUN_OPTIONS, **self.OPTIONS}.items()}, given

    def special_count(self, pair):
        """How many special tokens `pack` adds to one text or to a pair."""
        return task_features.special_count(self.tokenizer, pair)

    def pack(self, first, second=None):
        """[CLS] first [SEP] (second [SEP]) -> a `batching.Sequence`; RoBERTa's pair is
        <s> first </s></s> second </s> (the tokenizer's `pair_separators`)."""
        cls, sep = self.tokenizer.cls_id, self.tokenizer.sep_id
        if second is None:
            ids = np.concatenate([[cls], first, [sep]])
            return batching.Sequence(ids)
        separators = [sep] * task_features.pair_separators(self.tokenizer)
        ids = np.concatenate([[cls], first, separators, second, [sep]])
        # The second text's segment id: 1, or 0 for RoBERTa (as fine-tuning packs it).
        segments = np.concatenate([np.zeros(len(first) + 1 + len(separators)),
                                   np.full(len(second) + 1,
                                           task_features.second_segment_id(self.tokenizer))])
        return batching.Sequence(ids, segments)

    def fit(self, first, second=None, truncation=False, what="The text"):
        """`first` (and `second`) cut to fit the model with its special tokens:
        `truncation` False (refuse), True / "longest_first", "only_first" or
        "only_second"."""
        specials = self.special_count(second is not None)
        budget = self.max_length - specials
        total = len(first) + (0 if second is None else len(second))
        if total <= budget:
            return first, second
        if truncation is False or truncation == "do_not_truncate":
            raise InputTooLongError(
                f"{what} is {total + specials} tokens long; the model takes at most "
                f"{self.max_length}. Pass truncation=True to cut it.")
        if second is None:
            if truncation not in (True, "longest_first", "only_first"):
                raise ValueError(f"truncation={truncation!r} needs a text pair.")
            return first[:budget], None
        if truncation in (True, "longest_first"):
            a, b = longest_first(len(first), len(second), budget)
            return first[:a], second[:b]
        if truncation not in ("only_first", "only_second"):
            raise ValueError(f"Unknown truncation {truncation!r}. Allowed: True, False, "
                             "'longest_first', 'only_first', 'only_second'.")
        keep, other = (first, second) if truncation == "only_first" else (second, first)
        room = budget - len(other)
        if room <= 0:
            raise InputTooLongError(
                f"{what}: the pair is {total + specials} tokens long and cutting only the "
                f"{truncation[5:]} text cannot fit it into {self.max_length}.")
        keep = keep[:room]
        return (keep, second) if truncation == "only_first" else (first, keep)

    def run(self, sequences, options):
        """The model's output row of each sequence (`batching.run`)."""
        return batching.run(self.source.runner, sequences, self.tokenizer.pad_id,
                            batch_size=options["batch_size"],
                            progress=options["progress"])

    def export(self, path, **options):
        """Writes a SavedModel whose `serving_default` takes raw strings and returns this
        pipeline's answers, with `options` (the call's options, over the construction's)
        fixed in the graph: see `kbert.pipelines.exporting`. Returns `path`."""
        from kbert.pipelines import exporting

        return exporting.export(self, path, options)

    def export_tflite(self, path, quantize=None, **options):
        """Writes a TFLite model (`path`, a `.tflite` file) whose `serving_default` takes raw
        strings and returns this pipeline's answers, `options` fixed in it; `quantize`: None,
        "dynamic" or "float16". See `kbert.pipelines.tflite_exporting`. Returns `path`."""
        from kbert.pipelines import tflite_exporting

        return tflite_exporting.export_tflite(self, path, quantize, options)

    def __repr__(self):
        return f"<{type(self).__name__} on {self.source.name}>"
