"""Where a cleaned paragraph breaks into sentences: after `.`, `!`, `?` or `…` (closing
quotes or brackets may follow) before a capital, a digit, or an opening quote or bracket and
one of those, except after the dot of an abbreviation or an initial ("Dr. Smith",
"J. R. R. Tolkien", "Fig. 3", "the U.S. Army").

The rules are regular-expression replacements in the syntax that Python's `re` and RE2 share
(no lookaround), applied in order by `split` here and by the summarizer's SavedModel graph
(`kbert.tasks.extractive_summarization.serving`, `tf.strings.regex_replace`), so that both
split alike. As in pysbd (the Pragmatic Segmenter), a dot that ends no sentence is first
replaced by a placeholder, the breaks are marked, and the dots are put back:

- a title before a name and a Latin connective ("Mr.", "Prof.", "e.g.", "vs.") never ends a
  sentence;
- a number's abbreviation ("No.", "Fig.", "pp.", "Jan.") ends none before a number;
- an abbreviation often inside a name ("Jr.", "St.", "Inc."), a dotted acronym ("U.S.",
  "p.m.") and an initial ("J.") can end one: they do when the next word is a common sentence
  opener ("the U.S. The ..." breaks, "the U.S. Army" does not);
- "etc." and "et al." are not listed: before a capital they end their sentence far more
  often than not, and before a lower-case word no rule breaks anyway.

Decimals ("3.5") and dotted names have no space after the dot and never break; an ellipsis
before a capital does. The placeholders and the mark are control characters, which cleaning
makes spaces (`kbert.data.corpora.clean_text`), so no text holds them.
"""

import re

NEVER_LAST = (
    "Mr", "Mrs", "Ms", "Messrs", "Mme", "Mlle", "Dr", "Drs", "Prof", "Rev", "Fr", "Hon",
    "Gen", "Col", "Capt", "Lt", "Sgt", "Maj", "Adm", "Cmdr", "Cpl", "Pvt", "Sen", "Rep",
    "Gov", "Pres", "Supt", "Insp", "Det", "Mt",
    "e.g", "E.g", "i.e", "I.e", "cf", "Cf", "vs", "viz", "approx")
BEFORE_NUMBERS = (
    "No", "no", "Nos", "nos", "Fig", "fig", "Figs", "figs", "Eq", "Eqs", "Vol", "vol", "Vols",
    "Ch", "ch", "Sec", "Sect", "Art", "Tab", "p", "pp", "ca", "Jan", "Feb", "Mar", "Apr",
    "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov", "Dec")
MAYBE_LAST = ("Jr", "Sr", "St", "Inc", "Ltd", "Co", "Corp", "Bros", "Ave", "Blvd", "Rd", "Dept",
              "Univ", "Esq", "Ph.D")
# Words that start a sentence far more often than they follow an abbreviation (pysbd's
# English list, more of its kind, and the imperatives that open docstrings' sentences).
OPENERS = (
    "A", "An", "The", "This", "That", "These", "Those", "There", "Here", "It", "Its", "He",
    "She", "His", "Her", "They", "Their", "We", "Our", "I", "You", "My", "In", "On", "At",
    "By", "For", "From", "With", "As", "After", "Before", "During", "Since", "When", "While",
    "If", "But", "And", "Or", "So", "Yet", "Then", "However", "Meanwhile", "Also", "Some",
    "Many", "Most", "More", "Millions", "What", "Who", "Why", "How", "Where", "Being", "Did",
    "Although", "Though", "Because", "Today", "Return", "Returns", "See", "Note")

MARK = "\x1e"  # between sentences (a record separator)
_KEPT = "\x1c"  # a dot that ends no sentence
_MAYBE = "\x1d"  # a dot that ends one before an opener

_BEFORE = "(^|[ \"'“‘(\\[{/–—-])"  # what an abbreviation follows: it starts a word


def _words(words):
    # Longest first: both engines take the first alternative that matches.
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


# (pattern, replacement) in order; after them, the sentences are the pieces between `MARK`s.
RULES = (
    (f"{_BEFORE}({_words(NEVER_LAST)})\\.", "\\1\\2" + _KEPT),
    (f"{_BEFORE}({_words(BEFORE_NUMBERS)})\\.( [0-9(])", "\\1\\2" + _KEPT + "\\3"),
    # An acronym before a lone capital: "U." alone would leave "S." unprotected.
    (f"{_BEFORE}({_words(MAYBE_LAST)}|[A-Za-z](?:\\.[A-Za-z])+|[A-Z])\\.", "\\1\\2" + _MAYBE),
    (f"{_MAYBE}( (?:{_words(OPENERS)})(?:[ ,;:'’]|$))", ".\\1"),
    ("([.!?…][\"'”’)\\]]*) ([\"'“‘(\\[]?[A-Z0-9])", "\\1" + MARK + "\\2"),
    (f"[{_KEPT}{_MAYBE}]", "."),
)

_COMPILED = tuple((re.compile(pattern), replacement) for pattern, replacement in RULES)


def split(paragraph):
    """The sentences of one paragraph cleaned by `kbert.data.corpora.clean_text` (a list of
    str; none empty)."""
    for pattern, replacement in _COMPILED:
        paragraph = pattern.sub(replacement, paragraph)
    return [sentence for sentence in paragraph.split(MARK) if sentence]
