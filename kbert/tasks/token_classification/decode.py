"""Predictions back to text, in Python (numpy): the two rules that turn a token
classifier's tags into entities.

- kbert's (`decode_entities`): a tag per word (read at its first piece) -> entities with
  character offsets, by seqeval's lenient rule for IOB1/IOB2 and BIOES/BILOU (the
  fine-tuning metrics').
- transformers' (`decode`, `aggregate_words`, `group_entities`): TokenClassificationPipeline's
  answer for each `aggregation_strategy`, from a tag per token. The pipeline
  (`kbert.pipelines.token_classification`), the host side of its TFLite model (`entities`)
  call it; `pipeline_serving` runs it in the graph, from `label_tables`.

The two are different rules, not one twice: transformers' groups every label ("O" too,
dropped afterwards by `ignore_labels`), splits groups only at B- or a change of label type,
and knows no E-/S- (it reads "E-PER" as a type of its own); kbert's follows seqeval, where O
is no entity and E-/S- close one.
"""

import collections

import numpy as np

from kbert.tokenizers.alignment import char_offset
from kbert.tasks.text_classification.decode import softmax
from kbert.tokenizers.decoding import DECODER_CLEAN_UP as _DECODER_CLEAN_UP
from kbert.tokenizers.decoding import replace_all as _replace_all

Entity = collections.namedtuple("Entity", ["type", "start", "end", "text"])
Entity.__doc__ = "An entity: its type and `text == original[start:end]`."

# scheme: the prefixes it allows; L(ast) and U(nit) are BILOU's names for E and S.
SCHEMES = {"IOB2": "BI", "BIO": "BI", "IOB1": "BI", "BIOES": "BIES", "IOBES": "BIES",
           "BILOU": "BIES"}
_PREFIX_ALIASES = {"L": "E", "U": "S"}


def _parse(tag, allowed, scheme):
    if tag is None or tag == "O":
        return "O", None
    prefix, dash, kind = tag.partition("-")
    if not dash or len(prefix) != 1:
        return "I", tag  # IO tagging: a bare type continues its entity
    prefix = _PREFIX_ALIASES.get(prefix, prefix)
    if prefix not in allowed:
        raise ValueError(f"Tag {tag!r} is not of the {scheme} scheme (prefixes "
                         f"{', '.join(allowed)}, and O).")
    return prefix, kind


def decode_entities(tags_per_word, words_with_spans, scheme="IOB2", text=None):
    """Entities from word tags: [(entity_type, char_start, char_end, text)].

    Decoding is lenient, as seqeval's default mode: an entity starts at B- (and S-), and
    at an I- (E-) that does not continue an entity of its type; it ends before O, B-, S-,
    another type, and after E- / S-. So IOB1 and IOB2 (BIO) decode alike. A word with no
    prediction (None) counts as O.

    Args:
        tags_per_word: tag strings ("B-PER", "O", ...), one per word.
        words_with_spans: `Word`s (text, start, end) in the original text.
        scheme: "IOB2" / "BIO" / "IOB1", or "BIOES" / "IOBES" / "BILOU".
        text: the original text; the entities' text is cut from it. Without it, from the
            words, with spaces between them (exact for `join_words`' texts).
    """
    if scheme not in SCHEMES:
        raise ValueError(f"Unknown scheme {scheme!r}; use one of {sorted(SCHEMES)}.")
    if len(tags_per_word) != len(words_with_spans):
        raise ValueError(f"{len(tags_per_word)} tags for {len(words_with_spans)} words.")
    allowed = SCHEMES[scheme]
    entities, current = [], None  # current: [type, first word, last word]

    def close():
        nonlocal current
        if current is not None:
            kind, first, last = current
            start, end = words_with_spans[first].start, words_with_spans[last].end
            entities.append(Entity(kind, start, end, _cut(words_with_spans, first, last, text)))
        current = None

    for i, tag in enumerate(tags_per_word):
        prefix, kind = _parse(tag, allowed, scheme)
        if prefix == "O":
            close()
            continue
        if prefix in "BS" or current is None or current[0] != kind:
            close()
            current = [kind, i, i]
        current[2] = i
        if prefix in "ES":
            close()
    close()
    return entities


def _cut(words, first, last, text):
    if text is not None:
        return text[words[first].start : words[last].end]
    pieces = [words[first].text]
    for before, word in zip(words[first:last], words[first + 1 : last + 1]):
        pieces.append(" " * (word.start - before.end) + word.text)
    return "".join(pieces)


# --- transformers' TokenClassificationPipeline -------------------------------------------

STRATEGIES = ("none", "simple", "first", "average", "max")


def pre_entities(sentence, tokens, ids, scores, offsets, unk_id, word_piece):
    """The non-special tokens as transformers gathers them: `word` (the token; an unknown
    token's original text), `scores` [tags], `start`, `end`, `index` (position in the
    model input) and `is_subword` (WordPiece: the token's length differs from its text's;
    SentencePiece and byte-level BPE, whose models have no continuing-subword prefix:
    transformers' fallback, no space before it or at its start)."""
    out = []
    for index, (token, token_id, token_scores) in enumerate(zip(tokens, ids, scores)):
        if token is None:  # a special token
            continue
        start, end = int(offsets[index][0]), int(offsets[index][1])
        reference = sentence[start:end]
        if word_piece:
            is_subword = len(token) != len(reference)
        else:
            is_subword = start > 0 and " " not in sentence[start - 1:start + 1]
        if token_id == unk_id:
            token, is_subword = reference, False
        out.append({"word": token, "scores": token_scores, "start": start, "end": end,
                    "index": index, "is_subword": is_subword})
    return out


def _word_entity(group, strategy, label_names, to_string):
    if strategy == "first":
        scores = group[0]["scores"]
        best = int(scores.argmax())
        score = scores[best]
    elif strategy == "max":
        scores = max(group, key=lambda e: e["scores"].max())["scores"]
        best = int(scores.argmax())
        score = scores[best]
    else:  # average
        scores = np.nanmean(np.stack([e["scores"] for e in group]), axis=0)
        best = int(scores.argmax())
        score = scores[best]
    return {"entity": label_names[best], "score": score,
            "word": to_string([e["word"] for e in group]),
            "start": group[0]["start"], "end": group[-1]["end"]}


def aggregate_words(entities, strategy, label_names, to_string):
    """One entity per word (a token and the subword tokens after it), tagged by `strategy`."""
    words, group = [], None
    for entity in entities:
        if group is None:
            group = [entity]
        elif entity["is_subword"]:
            group.append(entity)
        else:
            words.append(_word_entity(group, strategy, label_names, to_string))
            group = [entity]
    if group is not None:
        words.append(_word_entity(group, strategy, label_names, to_string))
    return words


def _tag(name):
    if name.startswith("B-"):
        return "B", name[2:]
    if name.startswith("I-"):
        return "I", name[2:]
    return "I", name  # not B-/I-: a continuation


def _group(entities, to_string):
    return {"entity_group": entities[0]["entity"].split("-", 1)[-1],
            "score": float(np.mean(np.nanmean([e["score"] for e in entities]))),
            "word": to_string([e["word"] for e in entities]),
            "start": entities[0]["start"], "end": entities[-1]["end"]}


def group_entities(entities, to_string):
    """Adjacent entities of one type merge, unless the later one is a B- tag."""
    groups, current = [], []
    for entity in entities:
        if current:
            bi, tag = _tag(entity["entity"])
            if not (tag == _tag(current[-1]["entity"])[1] and bi != "B"):
                groups.append(_group(current, to_string))
                current = []
        current.append(entity)
    if current:
        groups.append(_group(current, to_string))
    return groups


def decode(sentence, tokens, ids, logits, offsets, label_names, strategy, ignore_labels,
           unk_id, word_piece, to_string):
    """One text's logits [S, tags] -> transformers' entities (numpy / Python only)."""
    scores = softmax(np.asarray(logits, np.float32))
    pre = pre_entities(sentence, tokens, ids, scores, offsets, unk_id, word_piece)
    if strategy in ("none", "simple"):
        entities = []
        for p in pre:
            best = int(p["scores"].argmax())
            entities.append({"entity": label_names[best], "score": float(p["scores"][best]),
                             "index": p["index"], "word": p["word"], "start": p["start"],
                             "end": p["end"]})
    else:
        entities = aggregate_words(pre, strategy, label_names, to_string)
    if strategy != "none":
        entities = group_entities(entities, to_string)
    for entity in entities:
        entity["score"] = float(entity["score"])
    return [e for e in entities
            if e.get("entity") not in ignore_labels and e.get("entity_group") not in ignore_labels]


def strategy_and_ignored(opts):
    """The aggregation strategy (checked, lower case) and the ignored labels of `opts`."""
    strategy = opts["aggregation_strategy"]
    strategy = getattr(strategy, "value", strategy)  # transformers' AggregationStrategy
    if not isinstance(strategy, str) or strategy.lower() not in STRATEGIES:
        raise ValueError(f"Unknown aggregation_strategy {strategy!r}. Allowed: "
                         f"{', '.join(STRATEGIES)}.")
    ignore = ["O"] if opts["ignore_labels"] is None else list(opts["ignore_labels"])
    return strategy.lower(), ignore


def label_tables(names):
    """Per tag name: whether it begins a group (B-), its type, its group's name
    (`group_entities`' rule)."""
    tags = [_tag(name) for name in names]
    return ([bi == "B" for bi, _ in tags], [tag for _, tag in tags],
            [name.split("-", 1)[-1] for name in names])


# --- the host side of a TFLite token classifier ------------------------------------------
# (the `.tflite` export of a token-classification pipeline or of a `TokenClassifier`,
# `kbert.export(..., format="tflite")`): the model returns every token's tag, probabilities
# and UTF-8 byte span, and `entities` applies `decode` to one row of those outputs. Grouping
# is not in the model: it needs variable-length outputs per text (boolean masks, segment
# reductions, ragged rows), which TFLite has no kernels for.

def entities(text, outputs, row=0, label_names=None, aggregation_strategy="none",
             ignore_labels=("O",), unk_token="[UNK]"):
    """The token-classification pipeline's answer for `text` from row `row` of a TFLite
    token classifier's outputs (numpy; the rule is `decode`, Python only, which an app can
    port): a list of dicts as `pipe(text, aggregation_strategy=...)` gives (`entity`,
    `score`, `index`, `word`, `start`, `end`; grouped: `entity_group` instead of `entity`
    and no `index`)."""
    if aggregation_strategy not in STRATEGIES:
        raise ValueError(f"Unknown aggregation_strategy {aggregation_strategy!r}. Allowed: "
                         f"{', '.join(STRATEGIES)}.")
    if label_names is None:
        raise ValueError("entities needs the model's label_names (a name per tag).")
    starts = np.array([char_offset(text, b) for b in outputs["starts"][row]])
    ends = np.array([char_offset(text, b) for b in outputs["ends"][row]])
    tokens = [None if s < 0 else t.decode("utf-8")
              for s, t in zip(starts, outputs["tokens"][row])]
    ids = [-1 if t != unk_token else 0 for t in tokens]  # only "is it [UNK]" is read
    offsets = np.stack([np.maximum(starts, 0), np.maximum(ends, 0)], axis=1)

    def to_string(pieces):
        out = []
        for i, piece in enumerate(pieces):
            if i:
                piece = piece[2:] if piece.startswith("##") else " " + piece
            out.append(_replace_all(piece, _DECODER_CLEAN_UP))
        return "".join(out)

    return decode(text, tokens, ids, np.asarray(outputs["logits"][row]), offsets,
                  list(label_names), aggregation_strategy, list(ignore_labels), 0, True,
                  to_string)
