"""`kbert.export` of an `ExtractiveSummarizer` (the summarization pipeline's SavedModel):
raw documents in, summaries out, every step in the graph (docs/summarization.md, "Serve").

`serving_default`: `text` (string [batch]) -> `sentences` (string [batch, count]: the chosen
sentences in document order, as the splitter cleaned them; "" past `num_sentences`),
`scores` (float32 [batch, count]), `sentence_ids` (int32: each one's index among the
document's sentences; -1 past `num_sentences`), `num_sentences` (int32 [batch]) and
`summary_text` (string [batch]: the sentences joined by a space), with the pipeline's
`num_sentences` and `trigram_blocking` fixed in the graph. The steps are the Python
pipeline's: `kbert.data.sentences` as RE2 rules, BERTSum's layout in windows of whole
sentences (`features.windows`; with the model's `windows` "first", the sentences of the
first window alone can be chosen; segment ids by sentence or, with its `segments`
"paragraph", by paragraph), the best sentences with trigram blocking (`decode.select`).
"""

import tensorflow as tf

from kbert.data import sentences as sentence_rules
from kbert.tokenizers.packing import second_segment_id
from kbert.tasks.extractive_summarization.decode import DEFAULT_SENTENCES, summary_options
from kbert.tasks.graph.signatures import STRINGS, run_model

# `clean_text`'s whitespace (what str.split() splits at, Python's `\s`), in RE2.
_SPACE_CLASS = r"[\s\p{Z}\x0b\x1c-\x1f\x85]"
_SPACE = _SPACE_CLASS + "+"
_MARK = "\x1e"  # a record separator (whitespace): made a space before it marks anything


def split_sentences(text):
    """Documents [batch] -> their sentences, ragged [batch, (sentences)], as
    `kbert.data.corpora.split_sentences`, and each sentence's paragraph (int32 [sentences]:
    numbers that grow by one from one paragraph to the next within a document, as
    `kbert.data.corpora.split_paragraphs` counts them; not from 0)."""
    text = tf.strings.regex_replace(text, _MARK, " ")
    paragraphs = tf.strings.split(
        tf.strings.regex_replace(text, r"\n" + _SPACE_CLASS + r"*\n", _MARK), _MARK)
    flat = tf.strings.regex_replace(paragraphs.flat_values, _SPACE, " ")
    flat = tf.strings.regex_replace(flat, r"\p{C}", "")
    flat = tf.strings.regex_replace(tf.strings.regex_replace(flat, " +", " "), "^ | $", "")
    for pattern, replacement in sentence_rules.RULES:  # the Python splitter's, as RE2
        flat = tf.strings.regex_replace(flat, pattern, replacement)
    inner = tf.strings.split(flat, sentence_rules.MARK)  # [paragraphs, (sentences)]
    inner = tf.ragged.boolean_mask(inner, tf.strings.length(inner) > 0)
    # A paragraph without a sentence is not counted (split_paragraphs drops it).
    counted = tf.cumsum(tf.cast(inner.row_lengths() > 0, tf.int32))
    numbers = tf.gather(counted, inner.value_rowids())
    return paragraphs.with_flat_values(inner).merge_dims(1, 2), numbers


def _windows(lengths, documents, sequence_length):
    """Per sentence (flat): its window (row), its [CLS] position in it and its place among
    the window's sentences, as `features.windows` cuts them. One loop step per sentence,
    bounded by their number (`maximum_iterations`, as kbert.untrusted checks loops); each
    step writes its sentence's entries by `tf.where` on its index."""
    count = tf.shape(lengths)[0]
    index = tf.range(count)

    def step(i, window, used, place, rows, starts, places):
        new = tf.logical_or(tf.equal(i, 0), tf.logical_or(
            tf.not_equal(documents[i], documents[tf.maximum(i - 1, 0)]),
            used + lengths[i] > sequence_length))
        window = tf.where(new, window + 1, window)
        used = tf.where(new, 0, used)
        place = tf.where(new, 0, place)
        mine = tf.equal(index, i)
        return (i + 1, window, used + lengths[i], place + 1, tf.where(mine, window, rows),
                tf.where(mine, used, starts), tf.where(mine, place, places))

    zeros = tf.zeros_like(lengths)
    _, windows, _, _, rows, starts, places = tf.while_loop(
        lambda i, *_: i < count, step, (0, -1, 0, 0, zeros, zeros, zeros),
        maximum_iterations=count)
    return rows, starts, places, windows + 1


def _trigrams(sentences):
    """Each sentence's word trigrams, ragged [sentences, (trigrams)] of "a b c" strings:
    `decode`'s words (lower-cased runs of letters, digits and "_") three at a time."""
    words = tf.strings.split(tf.strings.regex_replace(
        tf.strings.lower(sentences, encoding="utf-8"), r"[^\p{L}\p{N}_]+", " "))
    flat, rows = words.flat_values, tf.cast(words.value_rowids(), tf.int32)
    # Trigram j starts at word j: its three words are in one sentence.
    whole = tf.equal(rows[:-2], rows[2:])
    trigrams = tf.strings.join([flat[:-2], flat[1:-1], flat[2:]], separator=" ")
    return tf.RaggedTensor.from_value_rowids(
        tf.boolean_mask(trigrams, whole), tf.boolean_mask(rows[:-2], whole),
        nrows=tf.shape(sentences)[0])


def _select(scores, documents, trigrams, count, trigram_blocking, candidates):
    """Per sentence (flat): chosen or not, by `decode.select` within each document, among
    the `candidates` (bool, per sentence). One loop step per sentence, best first, bounded
    by their number."""
    total = tf.shape(scores)[0]
    index = tf.range(total)
    order = tf.argsort(-scores, stable=True)
    order = tf.gather(order, tf.argsort(tf.gather(documents, order), stable=True))
    rows = trigrams.value_rowids()

    def step(k, chosen):
        i = order[k]
        same = tf.logical_and(chosen, tf.equal(documents, documents[i]))
        mine = tf.gather(same, rows)
        blocked = tf.reduce_any(tf.equal(trigrams[i][:, None],
                                         tf.boolean_mask(trigrams.flat_values, mine)[None]))
        room = tf.reduce_sum(tf.cast(same, tf.int32)) < count
        pick = tf.logical_and(room, tf.logical_not(blocked) if trigram_blocking else True)
        pick = tf.logical_and(pick, candidates[i])
        return k + 1, tf.logical_or(chosen, tf.logical_and(tf.equal(index, i), pick))

    _, chosen = tf.while_loop(lambda k, _: k < total, step,
                              (0, tf.zeros([total], tf.bool)), maximum_iterations=total)
    return chosen


def summarizer(model, tokenizer, sequence_length, count=DEFAULT_SENTENCES,
               trigram_blocking=True):
    """The graph function documents [batch] -> summaries (`serving_default`'s outputs): at
    most `count` sentences, with or without trigram blocking."""
    second = second_segment_id(tokenizer)
    first_only = getattr(model, "windows", "all") == "first"
    by_paragraph = getattr(model, "segments", "sentence") == "paragraph"

    def summarize(text):
        sentences, paragraphs = split_sentences(text)
        documents = tf.cast(sentences.value_rowids(), tf.int32)
        pieces = tokenizer.tokenize(sentences.flat_values)[:, :sequence_length - 2]
        lengths = tf.cast(pieces.row_lengths(), tf.int32) + 2
        rows, starts, places, windows = _windows(lengths, documents, sequence_length)
        total = tf.shape(lengths)[0]
        ids = tf.concat([tf.fill([total, 1], tokenizer.cls_id), tf.cast(pieces, tf.int32),
                         tf.fill([total, 1], tokenizer.sep_id)], axis=1)
        # Each window row: its sentences' tokens in order from column 0, then padding.
        token_rows = tf.gather(rows, ids.value_rowids())
        # Each sentence's segment id alternates by its place in its window, or by its
        # paragraph counted from the window's first sentence's.
        alternating = places
        if by_paragraph:  # a window's first sentence: `places` sentences before each
            alternating = paragraphs - tf.gather(paragraphs, tf.range(total) - places)
        segment = tf.gather((alternating % 2) * second, ids.value_rowids())

        def row_major(values, default):
            return tf.RaggedTensor.from_value_rowids(values, token_rows, nrows=windows).to_tensor(
                default, shape=[None, sequence_length])

        features = {"token_ids": row_major(ids.flat_values, tokenizer.pad_id),
                    "segment_ids": row_major(segment, 0),
                    "padding_mask": row_major(tf.ones_like(segment), 0)}
        logits = run_model(model, features)
        scores = tf.sigmoid(tf.gather_nd(logits, tf.stack([rows, starts], axis=1)))
        candidates = tf.ones_like(rows, tf.bool)
        if first_only:  # the sentences in their document's first window (its lowest row)
            first = tf.math.unsorted_segment_min(rows, documents, tf.shape(text)[0])
            candidates = tf.equal(rows, tf.gather(first, documents))
        chosen = _select(scores, documents, _trigrams(sentences.flat_values), count,
                         trigram_blocking, candidates)
        batch = tf.shape(text)[0]
        index = tf.cast(tf.ragged.range(sentences.row_lengths()).flat_values, tf.int32)

        def picked(values, default):
            ragged = tf.RaggedTensor.from_value_rowids(
                tf.boolean_mask(values, chosen), tf.boolean_mask(documents, chosen),
                nrows=batch)
            return ragged.to_tensor(default, shape=[None, count]), ragged

        texts, ragged_texts = picked(sentences.flat_values, "")
        return {"sentences": texts, "scores": picked(scores, 0.0)[0],
                "sentence_ids": picked(index, -1)[0],
                "num_sentences": tf.cast(ragged_texts.row_lengths(), tf.int32),
                "summary_text": tf.strings.reduce_join(ragged_texts, axis=1, separator=" ")}

    return summarize


def summarization(pipe, model, opts, given):
    count, blocking = summary_options(opts)
    return {"serving_default": (summarizer(model, pipe.tokenizer, pipe.max_length, count,
                                           blocking), [STRINGS])}


PIPELINES = {"summarization": summarization}
