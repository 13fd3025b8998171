"""`kbert.pipeline("token-classification")` (alias "ner"): transformers'
TokenClassificationPipeline on a kbert `TokenClassifier`: a tag per token, or entities
grouped by `aggregation_strategy`, with character offsets into the original text."""

import numpy as np

from kbert.pipelines.base import Pipeline
from kbert.tasks.text_classification.decode import softmax

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


class TokenClassificationPipeline(Pipeline):
    """Tags of the tokens of texts, or the entities they form.

    Call: `pipe("a text")` -> a list of dicts; `pipe([...])` -> a list of such lists.
    Options (at construction or per call):
        aggregation_strategy: "none" (default: one dict per token, with `entity`, `score`,
            `index` (its position in the model input), `word` (the token), `start`, `end`),
            "simple" (adjacent tokens of one type grouped, B- starts a new group),
            "first" / "average" / "max" (each word tagged by its first token, the mean of
            its tokens' scores, or its most confident token, then grouped): `entity_group`,
            `score`, `word`, `start`, `end`.
        ignore_labels: the tags left out (default ["O"]).
        batch_size, progress: see `kbert.pipeline`.
    `start` / `end` are character offsets into the text as given (`text[start:end]`).
    Texts longer than the model are cut to its `max_sequence_length`, as transformers cuts
    them to the tokenizer's `model_max_length`.
    """

    task = "token-classification"
    OPTIONS = {"aggregation_strategy": "none", "ignore_labels": None}

    def __call__(self, inputs, **options):
        opts, _ = self.options(options)
        strategy, ignore = self.strategy_and_ignored(opts)
        texts = [inputs] if isinstance(inputs, str) else inputs
        if isinstance(texts, (list, tuple)) and not texts:  # transformers' refusal
            raise ValueError("At least one input is required. The token-classification "
                             "pipeline takes a text or a non-empty list of texts.")
        if not isinstance(texts, (list, tuple)) or not all(isinstance(t, str) for t in texts):
            raise ValueError("The token-classification pipeline takes a text or a non-empty "
                             f"list of texts; got {inputs!r:.80}.")
        encodings = self.encoder.encode(list(texts), self.specials)
        budget = self.max_length - 2
        sequences = [self.pack(e.ids[:budget]) for e in encodings]
        rows = self.run(sequences, opts)
        results = []
        for text, encoding, sequence, row in zip(texts, encodings, sequences, rows):
            results.append(self._decode(text, encoding, sequence, row, strategy, ignore))
        return results[0] if isinstance(inputs, str) else results

    @staticmethod
    def strategy_and_ignored(opts):
        """The aggregation strategy (checked, lower case) and the ignored labels of `opts`."""
        strategy = opts["aggregation_strategy"]
        strategy = getattr(strategy, "value", strategy)  # transformers' AggregationStrategy
        if not isinstance(strategy, str) or strategy.lower() not in STRATEGIES:
            raise ValueError(f"Unknown aggregation_strategy {strategy!r}. Allowed: "
                             f"{', '.join(STRATEGIES)}.")
        ignore = ["O"] if opts["ignore_labels"] is None else list(opts["ignore_labels"])
        return strategy.lower(), ignore

    @staticmethod
    def label_tables(names):
        """Per tag name: whether it begins a group (B-), its type, its group's name
        (`group_entities`' rule)."""
        tags = [_tag(name) for name in names]
        return ([bi == "B" for bi, _ in tags], [tag for _, tag in tags],
                [name.split("-", 1)[-1] for name in names])

    def _decode(self, text, encoding, sequence, logits, strategy, ignore):
        ids = sequence.token_ids
        count = len(ids) - 2
        offsets = np.zeros((len(ids), 2), np.int32)
        offsets[1:1 + count] = encoding.offsets[:count]
        # [CLS], [SEP] and special-token literals typed in the text are no entities.
        literal = np.concatenate([[True], encoding.words[:count] < 0, [True]])
        tokens = [None if literal[k] else self.encoder.token(i) for k, i in enumerate(ids)]
        return decode(text, tokens, [int(i) for i in ids], logits[:len(ids)], offsets,
                      self.source.label_names, strategy, ignore, self.tokenizer.unk_id,
                      self.tokenizer.continuation_prefix is not None,
                      self.encoder.tokens_to_string)
