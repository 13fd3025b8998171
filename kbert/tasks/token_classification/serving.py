"""A token classifier's serving signature (kbert's SavedModel contract, `export_saved_model`):
texts in, words with tags and entities with character offsets out, as `data.EncodedTagging`
and `decode.decode_entities` give them in Python.

Words are split by BERT's rule and tokenized one by one (`words_graph`), packed as
`[CLS] pieces [SEP]` (the last words cut at `sequence_length`, as `encode_tagging`), and each
word's tag is read at its first piece. Entities are decoded from the word tags with the
lenient rule of `decode.decode_entities` by vectorised run logic: no Python, no loop. One
function cannot serve both: the graph's rule is TensorFlow ops over every text's words at
once, the Python one runs where TensorFlow is not needed (fine-tuning's scores, an app).
What they share, the reading of a tag (`decode.tag_tables`, by `decode._parse`), is written
once, and tests/export/test_task_exports.py checks that the two agree on random tags.
"""

import tensorflow as tf

from kbert.tasks.graph.signatures import (
    STRINGS,
    add_ids_endpoint,
    dense_rows,
    label_names_of,
    run_model,
)
from kbert.tasks.token_classification.decode import (
    BEGIN,
    END,
    OUTSIDE,
    SINGLE,
    tag_tables,
)
from kbert.tokenizers.words_graph import align, substrings, valid_utf8


def decode_entities(prefix, kind, word_rows, row_splits):
    """Entities of flat word tags (`prefix`, `kind` int32 [W], words in text order).

    An entity starts at a B- or S- word, or at an I- / E- word whose word before is not of
    an open entity of its type (the first word of a text, after O, E-, S-, or another
    type); it goes on over the following I- / E- words of its type, and ends after E- / S-.

    Returns (`first`, `last`: word indices int32 [entities], `entity`: int32 [W], each
    word's entity or -1).
    """
    index = tf.range(tf.size(prefix))
    row_first = tf.equal(index, tf.gather(tf.cast(row_splits[:-1], tf.int32), word_rows))
    before = tf.maximum(index - 1, 0)
    previous_prefix, previous_kind = tf.gather(prefix, before), tf.gather(kind, before)
    closed_before = row_first | tf.reduce_any(
        tf.stack([tf.equal(previous_prefix, p) for p in (OUTSIDE, END, SINGLE)]), 0)
    member = tf.not_equal(prefix, OUTSIDE)
    starts = member & (tf.equal(prefix, BEGIN) | tf.equal(prefix, SINGLE) | closed_before
                       | tf.not_equal(previous_kind, kind))
    entity = tf.where(member, tf.cumsum(tf.cast(starts, tf.int32)) - 1, -1)
    count = tf.reduce_sum(tf.cast(starts, tf.int32))
    first = tf.boolean_mask(index, starts)
    last = tf.math.unsorted_segment_max(tf.boolean_mask(index, member),
                                        tf.boolean_mask(entity, member), count)
    return first, last, entity


def add_endpoints(archive, model, tokenizer, sequence_length, label_names=None, tag_scheme=None):
    """A `TokenClassifier`'s `serving_default` and `serving_ids` on the ExportArchive `archive`
    (the words of a WordPiece or SentencePiece tokenizer: `refuse_byte_pair_words`)."""
    if model.label_names is None and label_names is None:
        raise ValueError("A TokenClassifier exports with its tag names: build it with "
                         "`label_names` or pass `label_names=[...]` to export_saved_model.")
    names = label_names_of(model, label_names)
    tag_scheme = "IOB2" if tag_scheme is None else tag_scheme
    prefixes, types, type_names = tag_tables(names, tag_scheme)

    def serve_text(text):
        text = valid_utf8(text)
        aligned = align(text, tokenizer, spans=False)
        words, pieces = aligned["words"], aligned["pieces"]
        row_splits, rows = words["row_splits"], words["row"]
        per_text = tf.RaggedTensor.from_row_splits(pieces, row_splits, validate=False
                                                   ).merge_dims(1, 2)
        features = tokenizer.pack([per_text], sequence_length)
        logits = run_model(model, features)  # [B, S, tags]
        # Each word's first piece: after [CLS] and the pieces of the words before it.
        counts = tf.cast(pieces.row_lengths(), tf.int32)
        before = tf.cumsum(counts, exclusive=True)
        text_first_word = tf.gather(tf.cast(row_splits[:-1], tf.int32), rows)
        position = 1 + before - tf.gather(before, text_first_word)
        tagged = (counts > 0) & (position <= sequence_length - 2)  # else cut off or no piece
        word_logits = tf.gather_nd(logits, tf.stack([rows, tf.where(tagged, position, 0)], 1))
        probabilities = tf.nn.softmax(word_logits)  # [W, tags]
        tag = tf.argmax(word_logits, axis=-1, output_type=tf.int32)
        word_scores = tf.where(tagged, tf.reduce_max(probabilities, axis=-1), 0.0)
        word_tags = tf.where(tagged, tf.gather(tf.constant(names), tag), "")
        prefix = tf.where(tagged, tf.gather(tf.constant(prefixes, tf.int32), tag), OUTSIDE)
        kind = tf.gather(tf.constant(types, tf.int32), tag)
        first, last, entity = decode_entities(prefix, kind, rows, row_splits)
        member = entity >= 0
        scores = tf.math.unsorted_segment_mean(tf.boolean_mask(word_scores, member),
                                               tf.boolean_mask(entity, member), tf.size(first))
        entity_rows = tf.gather(rows, first)
        starts = tf.gather(words["start"], first)
        ends = tf.gather(words["end"], last)
        batch = tf.shape(text)[0]

        def dense(values, rows, default):
            return dense_rows(values, rows, batch, default)

        return {
            "entity_types": dense(tf.gather(tf.constant(type_names), tf.gather(kind, first)),
                                  entity_rows, ""),
            "entity_starts": dense(starts, entity_rows, -1),
            "entity_ends": dense(ends, entity_rows, -1),
            "entity_texts": dense(substrings(text, entity_rows, starts, ends), entity_rows, ""),
            "entity_scores": dense(scores, entity_rows, 0.0),
            "num_entities": tf.math.bincount(entity_rows, minlength=batch, maxlength=batch),
            "words": dense(words["text"], rows, ""),
            "word_starts": dense(words["start"], rows, -1),
            "word_ends": dense(words["end"], rows, -1),
            "word_tags": dense(word_tags, rows, ""),
            "word_scores": dense(word_scores, rows, 0.0),
            "num_words": tf.cast(row_splits[1:] - row_splits[:-1], tf.int32),
        }

    archive.add_endpoint("serving_default", serve_text, [STRINGS])
    add_ids_endpoint(archive, model, lambda features: {"logits": run_model(model, features)})
