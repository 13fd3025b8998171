"""`pipeline.export` of token classification (transformers' contract): transformers'
entities in the graph, as `decode.decode` makes them in Python: each token's tag and
characters, words of a token and its subword tokens ("first" / "average" / "max"), adjacent
entities of one type grouped ("simple" and the word strategies), the ignored labels left
out. The graph cannot call the Python rule; the labels' tables come from the one place
(`decode.label_tables`).

Tokens and their characters are the tokenizer's `graph_encode`, as `Encoder.encode` makes
them; a special-token literal typed in a text ("[SEP]") is its token, as in the pipeline: it
counts in the model's length and is no entity.
"""

import tensorflow as tf

from kbert.tasks.graph.signatures import STRINGS, dense_rows, ragged_rows, run_model
from kbert.tokenizers.words_graph import substrings, valid_utf8
from kbert.tasks.graph import packing as graph
from kbert.tasks.token_classification.decode import label_tables, strategy_and_ignored


def _label_tables(names):
    """Per label id: begins a group (B-), its type id, its group name."""
    begins, types, groups = label_tables(names)
    kinds = sorted(set(types))
    return (tf.constant(begins, tf.bool), tf.constant([kinds.index(t) for t in types], tf.int32),
            tf.constant(groups))


def _segments(new, rows):
    """Groups of flat items in order, one starting where `new` holds or at a row's first
    item: each item's group id (int32), the groups' count, each group's first and last
    item."""
    starts = new | tf.not_equal(rows, tf.concat([[-1], rows], 0)[:-1])
    group = tf.cumsum(tf.cast(starts, tf.int32)) - 1
    count = tf.reduce_sum(tf.cast(starts, tf.int32))
    index = tf.range(tf.size(rows))
    return (group, count, tf.boolean_mask(index, starts),
            tf.math.unsorted_segment_max(index, group, count))


def _tokens(text, tokenizer, specials):
    """Ragged [B, (tokens)] flat indices, and flat per-token `ids`, `starts`, `ends`, `word`,
    `subword`, `entity` (False for a special literal typed in the text), from the
    tokenizer's `graph_encode`. A token is a subword, as transformers tells: with a
    continuing-subword prefix (WordPiece's "##"), where its text is not its characters';
    without one, unless it starts the text or a space (" ") is before or at its start."""
    encoded = tokenizer.graph_encode(text, specials)
    ids = encoded["ids"].flat_values
    tokens = encoded["ids"].with_flat_values(tf.range(tf.size(ids)))
    rows = tf.cast(encoded["ids"].value_rowids(), tf.int32)
    starts, ends = encoded["starts"].flat_values, encoded["ends"].flat_values
    codes = encoded["codes"]
    row_start = tf.gather(tf.cast(codes.row_starts(), tf.int32), rows)
    row_length = tf.gather(tf.cast(codes.row_lengths(), tf.int32), rows)
    flat_codes = tf.concat([codes.flat_values, [0]], 0)

    def is_space(at):
        inside = (at >= 0) & (at < row_length)
        where = tf.where(inside, row_start + at, tf.size(flat_codes) - 1)
        return inside & tf.equal(tf.gather(flat_codes, where), ord(" "))

    unknown = tf.equal(ids, tokenizer.unk_id)
    if tokenizer.continuation_prefix is not None:
        token_lengths = tf.constant([len(t) for t in tokenizer.vocabulary], tf.int32)
        subword = tf.not_equal(tf.gather(token_lengths, ids), ends - starts)
    else:
        subword = (starts > 0) & ~is_space(starts - 1) & ~is_space(starts)
    return tokens, {
        "ids": ids, "starts": starts, "ends": ends,
        "word": tf.where(unknown, substrings(text, rows, starts, ends),
                         tf.gather(tf.constant(tokenizer.vocabulary), ids)),
        "subword": ~unknown & subword, "entity": ~encoded["literal"].flat_values}


def token_classification(pipe, model, opts, given):
    """`pipeline.export`'s endpoints for `pipe`, a token-classification pipeline (read for
    its tokenizer, `specials`, `max_length` and its source's `label_names`)."""
    strategy, ignore = strategy_and_ignored(opts)
    to_string = pipe.tokenizer.graph_tokens_to_string
    names = list(pipe.source.label_names)
    tokenizer = pipe.tokenizer
    budget = pipe.max_length - 2
    begins, types, groups = _label_tables(names)
    label_names = tf.constant(names)

    def serve(text):
        text = valid_utf8(text)
        batch = tf.shape(text)[0]
        tokens, per_token = _tokens(text, tokenizer, pipe.specials)
        kept = graph.keep_first(tokens, tf.minimum(graph.lengths(tokens), budget))
        logits = run_model(model, graph.pack(tokenizer, tf.gather(per_token["ids"], kept)))
        rows = tf.cast(kept.value_rowids(), tf.int32)
        position = tf.cast(tf.ragged.range(kept.row_lengths()).flat_values, tf.int32) + 1
        # [CLS], [SEP] and the special literals typed in the text are no entities.
        entity = tf.gather(per_token["entity"], kept.flat_values)
        flat = tf.boolean_mask(kept.flat_values, entity)
        rows, position = tf.boolean_mask(rows, entity), tf.boolean_mask(position, entity)
        starts, ends, word, subword = (tf.gather(per_token[key], flat)
                                       for key in ("starts", "ends", "word", "subword"))
        scores = tf.nn.softmax(tf.gather_nd(logits, tf.stack([rows, position], 1)))  # [N, T]
        if strategy in ("none", "simple"):
            label = tf.argmax(scores, axis=-1, output_type=tf.int32)
            entities = {"label": label, "score": tf.reduce_max(scores, axis=-1),
                        "index": position, "word": word, "start": starts, "end": ends,
                        "row": rows}
        else:
            entities = _words(strategy, scores, word, starts, ends, rows, subword, to_string)
        if strategy != "none":
            entities = _grouped(entities, begins, types, to_string)
        label = entities["label"]
        shown = tf.gather(label_names if strategy == "none" else groups, label)
        keep = tf.reduce_all(tf.not_equal(shown[:, None], tf.constant(ignore)[None]),
                             axis=1) if ignore else tf.ones_like(label, tf.bool)
        out_rows = tf.boolean_mask(entities["row"], keep)

        def padded(values, default):
            return dense_rows(tf.boolean_mask(values, keep), out_rows, batch, default)

        out = {"entity" if strategy == "none" else "entity_group": padded(shown, ""),
               "score": padded(entities["score"], 0.0)}
        if strategy == "none":
            out["index"] = padded(entities["index"], -1)
        out.update({"word": padded(entities["word"], ""), "start": padded(entities["start"], -1),
                    "end": padded(entities["end"], -1),
                    "num_entities": tf.math.bincount(out_rows, minlength=batch,
                                                     maxlength=batch)})
        return out

    return {"serving_default": (serve, [STRINGS])}


def _words(strategy, scores, word, starts, ends, rows, subword, to_string):
    """One entity per word (a token and the subword tokens after it): `aggregate_words`."""
    group, count, first_token, last_token = _segments(~subword, rows)
    if strategy == "first":
        chosen = tf.gather(scores, first_token)
    elif strategy == "max":
        index = tf.range(tf.size(rows))
        best = tf.reduce_max(scores, axis=-1)
        top = tf.math.unsorted_segment_max(best, group, count)
        token = tf.math.unsorted_segment_min(
            tf.where(tf.equal(best, tf.gather(top, group)), index, tf.size(index)), group,
            count)
        chosen = tf.gather(scores, token)
    else:  # average
        chosen = tf.math.unsorted_segment_mean(scores, group, count)
    label = tf.argmax(chosen, axis=-1, output_type=tf.int32)
    return {"label": label, "score": tf.reduce_max(chosen, axis=-1),
            "word": to_string(ragged_rows(word, group, count)),
            "start": tf.gather(starts, first_token), "end": tf.gather(ends, last_token),
            "row": tf.gather(rows, first_token)}


def _grouped(entities, begins, types, to_string):
    """Adjacent entities of one type merged unless the later one begins (B-):
    `group_entities`; the group's label is its first entity's."""
    label, rows = entities["label"], entities["row"]
    kind = tf.gather(types, label)
    new = tf.gather(begins, label) | tf.not_equal(kind, tf.concat([[-1], kind], 0)[:-1])
    group, count, first, last = _segments(new, rows)
    return {"label": tf.gather(label, first),
            "score": tf.math.unsorted_segment_mean(entities["score"], group, count),
            "word": to_string(ragged_rows(entities["word"], group, count)),
            "start": tf.gather(entities["start"], first),
            "end": tf.gather(entities["end"], last), "row": tf.gather(rows, first)}


PIPELINES = {"token-classification": token_classification}
