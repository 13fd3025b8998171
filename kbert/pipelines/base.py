"""What every pipeline shares: options given at construction or per call, packing token ids
into model inputs (with transformers' truncation rules), and the batched model run.

A pipeline is three steps, kept apart so that the first and last can later move into a
graph (`pipeline.export`): texts -> `batching.Sequence`s (tokenization, in
`kbert.tokenizers.encoding`), the model on length-grouped batches (`batching.run`), and
numpy post-processing of each sequence's output arrays into transformers' dicts.
"""

from kbert.pipelines import batching
from kbert.tasks.datasets import check_int  # noqa: F401 - the pipelines' check too
from kbert.tokenizers.encoding import Encoder

# Options every pipeline takes, at construction and per call.
RUN_OPTIONS = {"batch_size": batching.DEFAULT_BATCH_SIZE, "progress": None,
               "jit_compile": False}


# transformers' tokenizer options a pipeline passes through (`tokenizer_kwargs`) and the
# values kbert runs: `padding` changes no answer (kbert pads each batch, masked), so each of
# its legal values is taken.
TRUNCATIONS = (True, False, None, "longest_first", "only_first", "only_second",
               "do_not_truncate")
PADDINGS = (True, False, None, "longest", "max_length", "do_not_pad")
TOKENIZER_OPTIONS = ("truncation", "max_length", "padding")


def tokenizer_options(given, where="The pipeline"):
    """(`truncation`, `max_length`) of transformers' tokenizer options `given` (a dict of
    `TOKENIZER_OPTIONS`), checked; as transformers' tokenizers: `max_length` without
    `truncation` (and without padding) truncates "longest_first", and `truncation` not given
    is False."""
    unknown = sorted(set(given) - set(TOKENIZER_OPTIONS))
    if unknown:
        raise ValueError(f"{where} takes no tokenizer option {', '.join(map(repr, unknown))}; "
                         f"the tokenizer options kbert runs: {', '.join(TOKENIZER_OPTIONS)}.")
    truncation, max_length = given.get("truncation"), given.get("max_length")
    padding = given.get("padding")
    if not any(truncation is t or (isinstance(t, str) and truncation == t)
               for t in TRUNCATIONS):
        raise ValueError(f"Unknown truncation {truncation!r}. Allowed: "
                         f"{', '.join(map(repr, TRUNCATIONS))}.")
    if not any(padding is p or (isinstance(p, str) and padding == p) for p in PADDINGS):
        raise ValueError(f"Unknown padding {padding!r}. Allowed: "
                         f"{', '.join(map(repr, PADDINGS))}.")
    if max_length is not None:
        max_length = check_int("max_length", max_length, 1)
        if truncation is None and padding in (None, False, "do_not_pad"):
            truncation = "longest_first"
    return (False if truncation is None else truncation), max_length


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
        _check_jit_compile(self._defaults.get("jit_compile", False))
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

    def tokenization(self, opts, nested=None):
        """(`truncation`, `max_length`) of the call's tokenizer options (`tokenizer_options`):
        those of `TOKENIZER_OPTIONS` in `opts`, and the dict option `nested`
        (feature-extraction's `tokenize_kwargs`, fill-mask's `tokenizer_kwargs`)."""
        given = {k: opts[k] for k in TOKENIZER_OPTIONS if opts.get(k) is not None}
        inner = opts.get(nested) if nested else None
        if inner is not None:
            if not isinstance(inner, dict):
                raise ValueError(f"{nested} is a dict of tokenizer options; got {inner!r:.80}.")
            twice = sorted(set(inner) & set(given))
            if twice:
                raise ValueError(f"{twice[0]} parameter defined twice (given as keyword "
                                 f"argument as well as in {nested})")
            given.update(inner)
        return tokenizer_options(given, f"The {self.task} pipeline")

    def special_count(self, pair):
        """How many special tokens `pack` adds to one text or to a pair."""
        return self.tokenizer.special_count(pair)

    def pack(self, first, second=None):
        """[CLS] first [SEP] (second [SEP]) -> a `batching.Sequence`; RoBERTa's pair is
        <s> first </s></s> second </s> (the tokenizer's layout: `Tokenizer.pair_layout`)."""
        return batching.Sequence(*self.tokenizer.pair_layout(first, second))

    def fit(self, first, second=None, truncation=False, what="The text", max_length=None):
        """`first` (and `second`) cut to fit `max_length` tokens (default: the model's) with
        the special tokens: `truncation` False (refuse), True / "longest_first",
        "only_first" or "only_second". What is still longer than the model is refused, as
        transformers' model fails on it."""
        if max_length is None or truncation is False or truncation == "do_not_truncate":
            # Not truncating, transformers' tokenizer takes `max_length` for padding alone.
            return self._fit(first, second, truncation, what, self.max_length)
        specials = self.special_count(second is not None)
        if max_length <= specials:
            raise ValueError(f"max_length={max_length} leaves no room for a text beside the "
                             f"{specials} special tokens.")
        first, second = self._fit(first, second, truncation, what, max_length)
        return self._fit(first, second, False, what, self.max_length)

    def _fit(self, first, second, truncation, what, max_length):
        specials = self.special_count(second is not None)
        budget = max_length - specials
        total = len(first) + (0 if second is None else len(second))
        if total <= budget:
            return first, second
        if truncation is False or truncation == "do_not_truncate":
            raise InputTooLongError(
                f"{what} is {total + specials} tokens long; the model takes at most "
                f"{max_length}. Pass truncation=True to cut it.")
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
                f"{truncation[5:]} text cannot fit it into {max_length}.")
        keep = keep[:room]
        return (keep, second) if truncation == "only_first" else (first, keep)

    def run(self, sequences, options, runner=None):
        """The model's output row of each sequence (`batching.run`), by the source's runner
        or `runner`."""
        runner = runner or self.source.runner
        if _check_jit_compile(options["jit_compile"]):
            if getattr(runner, "compiled", None) is None:
                why = getattr(runner, "not_compiled", None) or (
                    f"{self.source.name} runs its own graph")
                raise ValueError(f"jit_compile=True compiles the pipeline's Keras model with "
                                 f"XLA, but {why}: pass jit_compile=False.")
            import keras

            if keras.backend.backend() != "tensorflow":
                raise ValueError(f"jit_compile=True compiles with TensorFlow's XLA; the Keras "
                                 f"backend is {keras.backend.backend()!r}: pass "
                                 "jit_compile=False.")
            runner = runner.compiled()
        return batching.run(runner, sequences, self.tokenizer.pad_id,
                            batch_size=options["batch_size"],
                            progress=options["progress"])

    def export(self, path, format="saved_model", quantize=None, **options):
        """Writes this pipeline's export (`kbert.export`): a SavedModel directory whose
        `serving_default` takes raw strings and returns this pipeline's answers, with
        `options` (the call's options, over the construction's) fixed in the graph, and
        `serving_ids` (ids in, the model's raw outputs out); or with `format="tflite"` a
        `.tflite` file (`quantize`: None, "dynamic" or "float16"). See
        `kbert.pipelines.exporting`. Returns `path`."""
        from kbert.pipelines import exporting

        return exporting.write(self, path, format, quantize, options)

    def check_export(self, opts):
        """Raises a ValueError where this pipeline's answers with the options `opts` cannot
        be exported (`kbert.pipelines.exporting`); a pipeline whose every option exports
        keeps this one, which checks nothing."""

    def export_tflite(self, path, quantize=None, **options):
        """`export(path, format="tflite", quantize=quantize, **options)`."""
        return self.export(path, "tflite", quantize, **options)

    def __repr__(self):
        return f"<{type(self).__name__} on {self.source.name}>"


def _check_jit_compile(value):
    """`jit_compile`, which must be True or False."""
    if not isinstance(value, bool):
        raise ValueError(f"`jit_compile` must be True or False, got {value!r}.")
    return value
