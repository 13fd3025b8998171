"""The pipelines' steps in the TensorFlow graph, for `pipeline.export`: texts -> ids (special
literals as their tokens, as `Encoder.ids`), transformers' truncation, packing into model
inputs padded to the batch's longest (tokens -> text is the tokenizer's
`graph_tokens_to_string` and `graph_decode`). Each is the graph twin of the Python step it
names; the export tests hold them equal on the reference inputs."""

import tensorflow as tf

from kbert.tokenizers import packing


def ids(tokenizer, text):
    """Strings [B] -> int32 ids ragged [B, (tokens)]: `Encoder.ids(texts, specials)` with
    every special-token literal typed in a text as its token."""
    text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace")
    return tf.cast(tokenizer.tokenize_keeping_special_tokens(text), tf.int32)


def lengths(ragged):
    return tf.cast(ragged.row_lengths(), tf.int32)


def keep_first(ragged, counts):
    """Each row's first `counts` [B] items."""
    positions = tf.ragged.range(ragged.row_lengths())
    return tf.ragged.boolean_mask(ragged, positions < tf.cast(counts, tf.int64)[:, None])


def too_long(condition, message):
    """Fails the call with `message` where any of `condition` [B] holds (the pipeline raises
    the same `InputTooLongError` for the whole list)."""
    return tf.debugging.Assert(~tf.reduce_any(condition), [message])


def fit(first, second, budget, truncation):
    """`Pipeline.fit` on a batch: `first` (and `second`) ragged ids cut to `budget` tokens
    by `truncation` (False: a text too long fails the call). Returns (first, second,
    checks) where `checks` are the assertions to run before the model."""
    a = lengths(first)
    b = 0 if second is None else lengths(second)
    if truncation is False or truncation == "do_not_truncate":
        return first, second, [too_long(a + b > budget, _TOO_LONG)]
    if second is None:
        return keep_first(first, tf.minimum(a, budget)), None, []
    fits = a + b <= budget
    if truncation in (True, "longest_first"):
        keep_a, keep_b = longest_first(a, b, budget)
        return keep_first(first, keep_a), keep_first(second, keep_b), []
    cut_first = truncation == "only_first"
    room = budget - (b if cut_first else a)
    check = too_long(~fits & (room <= 0), _PAIR_TOO_LONG)
    if cut_first:
        return keep_first(first, tf.where(fits, a, room)), second, [check]
    return first, keep_first(second, tf.where(fits, b, room)), [check]


def longest_first(a, b, budget):
    """How many tokens of each text of a pair (`a`, `b` int32, any shape) transformers'
    "longest_first" keeps within `budget` (`base.longest_first`, vectorised, plain
    arithmetic, so that TFLite runs it too): the longer text is cut first."""
    swap = a > b
    short, long = tf.minimum(a, b), tf.maximum(a, b)
    long = tf.where(short > budget, short, tf.maximum(short, budget - short))
    over = short + long > budget
    short = tf.where(over, budget // 2, short)
    long = tf.where(over, budget // 2 + budget % 2, long)
    fits = a + b <= budget
    return (tf.where(fits, a, tf.where(swap, long, short)),
            tf.where(fits, b, tf.where(swap, short, long)))


_TOO_LONG = ("A text is longer than the model takes (InputTooLongError): export the "
             "pipeline with truncation=True to cut it.")
_PAIR_TOO_LONG = ("A pair is too long for the model and cutting only one of its texts cannot "
                  "fit it (InputTooLongError).")


# (tokenizer, first, second=None) -> [CLS] first [SEP] (second [SEP]) padded to the batch's
# longest by the tokenizer's layout, as `Pipeline.pack`.
pack = packing.pack_to_longest


def fit_call(pipe, first, second, truncation, max_length):
    """`Pipeline.fit` in the graph with a call's options: cut to `max_length` (None: the
    model's), then refuse what is still longer than the model. `pipe`: a pipeline (its
    `special_count` and `max_length`). Returns (first, second, checks)."""
    specials = pipe.special_count(second is not None)
    checks = []
    if max_length is not None and truncation is not False and truncation != "do_not_truncate":
        if max_length <= specials:
            raise ValueError(f"max_length={max_length} leaves no room for a text beside the "
                             f"{specials} special tokens.")
        first, second, checks = fit(first, second, max_length - specials, truncation)
        truncation = False
    first, second, more = fit(first, second, pipe.max_length - specials, truncation)
    return first, second, checks + more
