"""`pipeline.export` of token classification: transformers' entities in the graph, as
`token_classification.decode` makes them in Python: each token's tag and characters, words
of a token and its subword tokens ("first" / "average" / "max"), adjacent entities of one
type grouped ("simple" and the word strategies), the ignored labels left out.

Tokens and their characters come from `kbert.export.word_alignment` (words by BERT's rule,
each tokenized alone: the same ids and offsets as `Encoder.encode`), so WordPiece models only
for now; a special-token literal typed in a text is text here, where the pipeline makes it
its token (and leaves it out of the entities).
"""

import tensorflow as tf

from kbert.export.signature_helpers import STRINGS, dense_rows, run_model
from kbert.export.word_alignment import (
    DELETED, _normalization, align, substrings, valid_utf8,
)
from kbert.pipelines import graph
from kbert.tokenizers import normalization


def _label_tables(pipe, names):
    """Per label id: begins a group (B-), its type id, its group name."""
    begins, types, groups = pipe.label_tables(names)
    kinds = sorted(set(types))
    return (tf.constant(begins, tf.bool), tf.constant([kinds.index(t) for t in types], tf.int32),
            tf.constant(groups))


def _segments(new, rows):
    """Group ids (int32) of flat items in order: a group starts where `new` holds or at a
    row's first item."""
    first_in_row = tf.not_equal(rows, tf.concat([[-1], rows], 0)[:-1])
    starts = new | first_in_row
    return tf.cumsum(tf.cast(starts, tf.int32)) - 1, starts


def _by_group(values, group, starts):
    """Ragged [groups, (items)] of flat `values` grouped by `group` (contiguous)."""
    return tf.RaggedTensor.from_value_rowids(values, tf.cast(group, tf.int64),
                                             nrows=tf.cast(tf.reduce_sum(
                                                 tf.cast(starts, tf.int32)), tf.int64),
                                             validate=False)


def _trimmed_ends(aligned, tokenizer):
    """Each piece's end with the characters that normalise to nothing at its end left out
    (a control or zero-width character, a stripped accent), as transformers' offsets have
    them: `word_alignment` gives a piece the characters up to the next one."""
    words, pieces = aligned["words"], aligned["pieces"]
    chars = tf.strings.unicode_encode(words["codes"][:, None], "UTF-8")
    lowercase, strip = _normalization(tokenizer)
    if lowercase:
        chars = normalization.lower(chars, nul_free=True)
    if strip:
        chars = normalization.strip_accents(chars)
    vanish = tf.equal(words["kinds"], DELETED) | tf.equal(tf.strings.length(chars), 0)
    kept = tf.boolean_mask(tf.range(tf.size(vanish)), ~vanish)  # sorted flat indices
    word = tf.cast(pieces.value_rowids(), tf.int32)
    base = tf.gather(words["first_char"] - words["start"], word)  # the text's first char
    starts, ends = aligned["piece_starts"], aligned["piece_ends"]
    last = tf.searchsorted(kept, base + ends - 1, side="right") - 1
    trimmed = tf.gather(tf.concat([kept, [-1]], 0),
                        tf.where(last < 0, tf.size(kept), last)) - base + 1
    return tf.where(trimmed > starts, tf.minimum(trimmed, ends), ends)


def token_classification(pipe, model, opts, given):
    strategy, ignore = pipe.strategy_and_ignored(opts)
    if pipe.encoder.sentence_piece:
        raise NotImplementedError(
            "pipeline.export of token-classification covers WordPiece models (BERT, "
            "DistilBERT, ELECTRA) for now, not SentencePiece ones (ALBERT): export the task "
            "model with kbert.export.export_saved_model, or run the pipeline in Python.")
    names = list(pipe.source.label_names)
    tokenizer = pipe.tokenizer
    budget = pipe.max_length - 2
    vocabulary = tf.constant(tokenizer.vocabulary)
    token_lengths = tf.constant([len(t) for t in tokenizer.vocabulary], tf.int32)
    begins, types, groups = _label_tables(pipe, names)
    label_names = tf.constant(names)

    def serve(text):
        text = valid_utf8(text)
        batch = tf.shape(text)[0]
        aligned = align(text, tokenizer)
        words, pieces = aligned["words"], aligned["pieces"]
        per_text = tf.RaggedTensor.from_row_splits(pieces, words["row_splits"],
                                                   validate=False).merge_dims(1, 2)
        spans = tf.RaggedTensor.from_row_splits(  # [B, (tokens)]: each token's flat index
            tf.RaggedTensor.from_row_splits(tf.range(tf.size(pieces.flat_values)),
                                            pieces.row_splits, validate=False),
            words["row_splits"], validate=False).merge_dims(1, 2)
        kept = graph.keep_first(spans, tf.minimum(graph.lengths(spans), budget))
        ids = tf.gather(pieces.flat_values, kept)
        logits = run_model(model, graph.pack(tokenizer, ids))
        rows = tf.cast(kept.value_rowids(), tf.int32)
        position = tf.cast(tf.ragged.range(kept.row_lengths()).flat_values, tf.int32) + 1
        flat = kept.flat_values
        token_ids = tf.gather(pieces.flat_values, flat)
        starts = tf.gather(aligned["piece_starts"], flat)
        ends = tf.gather(_trimmed_ends(aligned, tokenizer), flat)
        scores = tf.nn.softmax(tf.gather_nd(logits, tf.stack([rows, position], 1)))  # [N, T]
        unknown = tf.equal(token_ids, tokenizer.unk_id)
        word = tf.where(unknown, substrings(text, rows, starts, ends),
                        tf.gather(vocabulary, token_ids))
        subword = ~unknown & tf.not_equal(tf.gather(token_lengths, token_ids), ends - starts)
        if strategy in ("none", "simple"):
            label = tf.argmax(scores, axis=-1, output_type=tf.int32)
            entities = {"label": label, "score": tf.reduce_max(scores, axis=-1),
                        "index": position, "word": word, "start": starts, "end": ends,
                        "row": rows}
        else:
            entities = _words(strategy, scores, word, starts, ends, rows, subword)
        if strategy != "none":
            entities = _grouped(entities, begins, types)
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


def _words(strategy, scores, word, starts, ends, rows, subword):
    """One entity per word (a token and the subword tokens after it): `aggregate_words`."""
    group, first = _segments(~subword, rows)
    count = tf.reduce_sum(tf.cast(first, tf.int32))
    index = tf.range(tf.size(rows))
    first_token = tf.boolean_mask(index, first)
    last_token = tf.math.unsorted_segment_max(index, group, count)
    if strategy == "first":
        chosen = tf.gather(scores, first_token)
    elif strategy == "max":
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
            "word": graph.tokens_to_string(_by_group(word, group, first), False),
            "start": tf.gather(starts, first_token), "end": tf.gather(ends, last_token),
            "row": tf.gather(rows, first_token)}


def _grouped(entities, begins, types):
    """Adjacent entities of one type merged unless the later one begins (B-):
    `group_entities`; the group's label is its first entity's."""
    label, rows = entities["label"], entities["row"]
    kind = tf.gather(types, label)
    previous = tf.concat([[-1], kind], 0)[:-1]
    new = tf.gather(begins, label) | tf.not_equal(kind, previous)
    group, first = _segments(new, rows)
    count = tf.reduce_sum(tf.cast(first, tf.int32))
    index = tf.range(tf.size(rows))
    first_entity = tf.boolean_mask(index, first)
    last_entity = tf.math.unsorted_segment_max(index, group, count)
    return {"label": tf.gather(label, first_entity),
            "score": tf.math.unsorted_segment_mean(entities["score"], group, count),
            "word": graph.tokens_to_string(_by_group(entities["word"], group, first), False),
            "start": tf.gather(entities["start"], first_entity),
            "end": tf.gather(entities["end"], last_entity),
            "row": tf.gather(rows, first_entity)}
