"""Entities in tag sequences, by seqeval's (1.2.2) rules, for `metrics.entity_scores`.

Two readers, as seqeval has:
- the default (conlleval) reader, `get_entities`: lenient, any well-typed run is an entity;
- the strict reader (`mode="strict"`), by scheme: a table of prefix patterns (previous
  prefix, current prefix, same / different type) that start, continue and end an entity,
  copied from seqeval/scheme.py, and its walk over the tokens (`Tokens.entities`).
"""

_ANY = "IOBESUL"
# scheme -> (allowed prefixes, start patterns, inside patterns, end patterns); a pattern is
# (previous prefixes, current prefixes, "same" / "diff" / "any" type).
_SCHEMES = {
    "IOB1": ("IOB",
             [("O", "I", "any"), ("I", "I", "diff"), ("B", "I", "any"), ("I", "B", "same"),
              ("B", "B", "same")],
             [("B", "I", "same"), ("I", "I", "same")],
             [("I", "I", "diff"), ("I", "O", "any"), ("I", "B", "any"), ("B", "O", "any"),
              ("B", "I", "diff"), ("B", "B", "same")]),
    "IOB2": ("IOB",
             [(_ANY, "B", "any")],
             [("B", "I", "same"), ("I", "I", "same")],
             [("I", "O", "any"), ("I", "I", "diff"), ("I", "B", "any"), ("B", "O", "any"),
              ("B", "I", "diff"), ("B", "B", "any")]),
    "IOE2": ("IOE",
             [("O", "I", "any"), ("O", "E", "any"), ("E", "I", "any"), ("E", "E", "any"),
              ("I", "I", "diff"), ("I", "E", "diff")],
             [("I", "E", "same"), ("I", "I", "same")],
             [("E", _ANY, "any")]),
    "IOBES": ("IOBES",
              [(_ANY, "B", "any"), (_ANY, "S", "any")],
              [("B", "I", "same"), ("B", "E", "same"), ("I", "I", "same"), ("I", "E", "same")],
              [("S", _ANY, "any"), ("E", _ANY, "any")]),
    "BILOU": ("BILOU",
              [(_ANY, "B", "any"), (_ANY, "U", "any")],
              [("B", "I", "same"), ("B", "L", "same"), ("I", "I", "same"), ("I", "L", "same")],
              [("U", _ANY, "any"), ("L", _ANY, "any")]),
}
SCHEMES = tuple(_SCHEMES)


def entities(sentences, scheme=None):
    """The set of entities of `sentences` (lists of tags): (type, start, end) tuples with
    seqeval's default reader (`scheme=None`; offsets into the sentences joined by "O"),
    (type, sentence, start, end) with the strict reader of `scheme`."""
    if scheme is None:
        return set(get_entities([tag for sentence in sentences for tag in [*sentence, "O"]]))
    if scheme not in _SCHEMES:
        raise ValueError(f"Unknown tag scheme {scheme!r}. Allowed: {', '.join(SCHEMES)}.")
    return {(tag, i, start, end) for i, sentence in enumerate(sentences)
            for tag, start, end in _strict_entities(sentence, _SCHEMES[scheme])}


# --- seqeval's default reader (seqeval.metrics.sequence_labeling.get_entities) ---

def get_entities(tags):
    """(type, first, last) of every chunk in one tag sequence, inclusive offsets."""
    chunks = []
    prev_tag, prev_type, begin = "O", "", 0
    for i, chunk in enumerate([*tags, "O"]):
        tag, type_ = chunk[0], chunk[1:].split("-", maxsplit=1)[-1] or "_"
        if _end_of_chunk(prev_tag, tag, prev_type, type_):
            chunks.append((prev_type, begin, i - 1))
        if _start_of_chunk(prev_tag, tag, prev_type, type_):
            begin = i
        prev_tag, prev_type = tag, type_
    return chunks


def _end_of_chunk(prev_tag, tag, prev_type, type_):
    return (prev_tag in ("E", "S")
            or (prev_tag in ("B", "I") and tag in ("B", "S", "O"))
            or (prev_tag not in ("O", ".") and prev_type != type_))


def _start_of_chunk(prev_tag, tag, prev_type, type_):
    return (tag in ("B", "S")
            or (prev_tag in ("E", "S", "O") and tag in ("E", "I"))
            or (tag not in ("O", ".") and prev_type != type_))


# --- seqeval's strict reader (seqeval.scheme.Tokens.entities) ---

def _token(tag, allowed):
    prefix = tag[:1]
    if prefix not in _ANY:
        raise ValueError(f"{tag!r} is not a tag: it must start with one of {list(_ANY)}.")
    if prefix not in allowed:
        raise ValueError(f"Invalid token is found: {tag}. Allowed prefixes are: "
                         f"{'|'.join(allowed)}.")
    return prefix, tag[1:].strip("-") or "_"


def _matches(patterns, prev, token):
    for prev_prefixes, prefixes, condition in patterns:
        if prev[0] in prev_prefixes and token[0] in prefixes and (
                condition == "any" or (prev[1] == token[1]) == (condition == "same")):
            return True
    return False


def _strict_entities(tags, rules):
    allowed, start_patterns, inside_patterns, end_patterns = rules
    outside = ("O", "_")
    tokens = [_token(tag, allowed) for tag in tags] + [outside]
    found, i, prev = [], 0, outside
    while i < len(tokens):
        token = tokens[i]
        if _matches(start_patterns, prev, token):
            end, last = i + 1, token
            while end < len(tokens) and _matches(inside_patterns, last, tokens[end]):
                last, end = tokens[end], end + 1
            # An entity that does not end by the scheme's rules is no entity.
            if end < len(tokens) and _matches(end_patterns, tokens[end - 1], tokens[end]):
                found.append((token[1], i, end))  # [start, end)
            i = end
        else:
            i += 1
        prev = tokens[i - 1]
    return found
