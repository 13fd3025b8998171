"""Text normalisation in the graph that draws its lines where Python's `unicodedata` does.

The reference tokenizers (google-research/bert's and albert's tokenization.py, and their
ports in transformers) are Python: they clean, lower-case and strip accents with the Unicode
tables of the Python that runs them. TensorFlow's ops use RE2's and ICU's tables instead,
of other Unicode versions and with gaps: RE2 has no class of unassigned code points (Cn),
and `tf.strings.lower` stops at the first NUL and lags behind Python's case mappings. So the
character classes here are built once from this Python's `unicodedata` and compiled into
RE2 classes: the graph (a SavedModel too) keeps the lines of the Python that built it.

The text functions take and return string tensors of any shape, in valid UTF-8.
"""

import functools
import unicodedata

import tensorflow as tf
import tensorflow_text as tf_text

_SURROGATES = range(0xD800, 0xE000)  # not characters; never in valid UTF-8

# kind: (the categories it takes (prefixes), characters added, characters removed, and a
# further test of each character of those categories, or None).
_CLASSES = {
    # BERT's cleaning (`_clean_text`): NUL, U+FFFD and `_is_control` (every C* but tab,
    # newline and carriage return) are deleted ...
    "deleted": (("C",), "\x00\ufffd", "\t\n\r", None),
    # ... and `_is_whitespace` becomes a plain space (the space itself is left alone).
    "space": (("Zs",), "\t\n\r", " ", None),
    # What BERT's `_run_strip_accents` drops after NFD.
    "nonspacing_mark": (("Mn",), "", "", None),
    # What ALBERT's `preprocess_text` drops after NFKD: `unicodedata.combining(c) != 0`, a
    # canonical combining class, not a category (Thai and Devanagari vowel signs are Mn of
    # class 0 and stay; a few Mc have a class and go).
    "combining": (("M",), "", "", lambda char: unicodedata.combining(char) != 0),
    # `str.split()`'s separators: \x1c-\x1f and U+0085 too, which RE2's \s is not.
    "whitespace": (("Z", "Cc"), "", "", str.isspace),
    # BERT's `_is_punctuation`: P*, and every ASCII non-alphanumeric ("$", "+", "^", ...).
    "punctuation": (("P",), "$+<=>^`|~", "", None),
}


@functools.lru_cache(maxsize=None)
def _category_runs():
    """[(first, last, category)] over all code points; surrogates get the category ""."""
    runs = []
    for code in range(0x110000):
        category = "" if code in _SURROGATES else unicodedata.category(chr(code))
        if runs and runs[-1][2] == category:
            runs[-1][1] = code
        else:
            runs.append([code, code, category])
    return runs


@functools.lru_cache(maxsize=None)
def character_ranges(kind):
    """The code points of a character class as sorted inclusive (first, last) ranges.

    `kind` is one of "deleted", "space" (BERT's cleaning), "nonspacing_mark", "combining",
    "whitespace", "punctuation". A path that maps token offsets back to the original text
    can classify the decoded code points with these ranges: `clean_text` deletes the
    "deleted" characters and turns each "space" character into one space, nothing else.
    """
    prefixes, added, removed, test = _CLASSES[kind]
    exceptions = [ord(char) for char in added + removed]
    ranges = []

    def add(first, last):
        if ranges and ranges[-1][1] == first - 1:
            ranges[-1] = (ranges[-1][0], last)
        else:
            ranges.append((first, last))

    for first, last, category in _category_runs():
        matches = category.startswith(prefixes)
        if not any(first <= code <= last for code in exceptions):
            if matches and test is None:
                add(first, last)  # a whole run in one step: most of the code space is Cn/Co
            if not matches or test is None:
                continue
        for code in range(first, last + 1):
            char = chr(code)
            if char in added or (matches and char not in removed
                                 and (test is None or test(char))):
                add(code, code)
    return tuple(ranges)


def re2_class(ranges, negate=False):
    """An RE2 character class of (first, last) code point ranges."""
    parts = (rf"\x{{{a:x}}}" if a == b else rf"\x{{{a:x}}}-\x{{{b:x}}}" for a, b in ranges)
    return ("[^" if negate else "[") + "".join(parts) + "]"


@functools.lru_cache(maxsize=None)
def _re2_class(kind):
    return re2_class(character_ranges(kind))


def clean_text(text):
    """BERT's text cleaning (`_clean_text` of tokenization.py), for cased and uncased models.

    Deletes NUL, U+FFFD and every character of a category C* (control Cc, format Cf such as
    zero-width spaces, joiners, soft hyphens, bidi marks and BOMs, private use Co,
    unassigned Cn) except tab, newline and carriage return; those three and every Zs space
    become a plain space.
    """
    text = tf.strings.regex_replace(text, _re2_class("deleted"), "")
    return tf.strings.regex_replace(text, _re2_class("space"), " ")


@functools.lru_cache(maxsize=None)
def _lower_fixes():
    """{character: Python's lower form} where `tf.strings.lower` differs (ICU's case tables
    in TensorFlow are of an older Unicode version than Python's)."""
    probe = [chr(code) for first, last, category in _category_runs()
             if category not in ("", "Cn", "Co")  # no case there; most of the code space
             for code in range(first, last + 1)
             if chr(code).lower() != chr(code) or category in ("Lu", "Lt")]
    with tf.init_scope():  # eager even while a tf.function or tf.data map is being traced
        theirs = tf.strings.lower(probe, encoding="utf-8").numpy()
    return {char: char.lower() for char, lowered in zip(probe, theirs)
            if lowered.decode("utf-8") != char.lower()}


def lower(text, alphabet=None, nul_free=False):
    """Python's `str.lower` (final sigma and "İ" included) in the graph, NUL-safe.

    `tf.strings.lower(..., encoding="utf-8")` drops everything after a NUL ("ab\\x00cd" ->
    "ab"), so the text is lower-cased between NULs and joined again: a NUL is neither cased
    nor case-ignorable, so no context rule (final sigma) looks across it. The case pairs
    that `tf.strings.lower` lacks are mapped first, one pass each.

    Args:
        text: a string tensor.
        alphabet: the characters that matter downstream (a vocabulary's), or None (all):
            a missing case pair is only mapped where one of its characters is in it, as
            otherwise both are alike unknown.
        nul_free: the text holds no NUL (BERT's cleaning deleted them): the NUL-safe way,
            which costs more, is not needed.
    """
    text = tf.convert_to_tensor(text, tf.string)
    for char, lowered in _lower_fixes().items():
        if alphabet is None or char in alphabet or any(c in alphabet for c in lowered):
            text = tf.strings.regex_replace(text, rf"\x{{{ord(char):x}}}", lowered)
    if nul_free:
        return tf.strings.lower(text, encoding="utf-8")
    shape = tf.shape(text)
    pieces = tf.strings.split(tf.reshape(text, [-1]), "\x00")  # [strings, (pieces)]
    lowered = tf.strings.lower(pieces.flat_values, encoding="utf-8")
    # The NUL goes back after every piece but a string's last (reduce_join's separator
    # cannot be a NUL: it is lost on the way).
    index = tf.range(tf.size(lowered, out_type=tf.int64))
    last = tf.equal(index, tf.repeat(pieces.row_limits() - 1, pieces.row_lengths()))
    lowered = tf.where(last, lowered, lowered + "\x00")
    joined = tf.strings.reduce_join(pieces.with_flat_values(lowered), axis=-1)
    return tf.reshape(joined, shape)


def strip_accents(text):
    """BERT's `_run_strip_accents`: NFD, then the nonspacing marks (Mn) are dropped."""
    text = tf_text.normalize_utf8(text, "NFD")
    return tf.strings.regex_replace(text, _re2_class("nonspacing_mark"), "")


def strip_combining_marks(text):
    """ALBERT's accent stripping: NFKD, then every character of a nonzero canonical
    combining class is dropped."""
    text = tf_text.normalize_utf8(text, "NFKD")
    return tf.strings.regex_replace(text, _re2_class("combining"), "")


# The two accent rules in Python (on a `str`), for the offsets that map tokens back to the
# original characters (`kbert.tokenizers.offsets`, `kbert.tokenizers.word_pieces`).

def python_strip_accents(text):
    """`strip_accents` of a Python string: NFD, then the nonspacing marks (Mn) dropped."""
    return "".join(c for c in unicodedata.normalize("NFD", text)
                   if unicodedata.category(c) != "Mn")


def python_strip_combining_marks(text):
    """`strip_combining_marks` of a Python string: NFKD, then the characters of a nonzero
    canonical combining class dropped."""
    return "".join(c for c in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(c))


def collapse_whitespace(text):
    """Python's `" ".join(text.split())`: runs of whitespace to one space, ends stripped."""
    text = tf.strings.regex_replace(text, _re2_class("whitespace") + "+", " ")
    return tf.strings.regex_replace(text, "^ | $", "")
