"""Extractive summarization's SavedModel signatures (`kbert.export.export_saved_model` of an
`ExtractiveSummarizer`): raw documents in, summaries out, every step in the graph, so that
the SavedModel loads with TensorFlow and tensorflow-text alone.

- `serving_default`: `text` (string [batch]) -> `sentences` (string [batch, count]: the
  chosen sentences in document order, as the splitter cleaned them; "" past
  `num_sentences`), `scores` (float32 [batch, count]), `sentence_ids` (int32: each one's
  index among the document's sentences; -1 past `num_sentences`), `num_sentences` (int32
  [batch]) and `summary_text` (string [batch]: the sentences joined by a space). The steps
  are the Python pipeline's: `kbert.data.corpora.split_sentences` as RE2 rules, BERTSum's
  layout in windows of whole sentences (`features.windows`; with the model's `windows`
  "first", the sentences of the first window alone can be chosen), the 3 best sentences
  with trigram blocking (`decode.select`).
- `serving_ids`: ids made elsewhere -> `scores` (float32 [batch, length]: the sigmoid of
  every position; read them at the sentences' [CLS]).
"""

import tensorflow as tf

from kbert.tokenizers.packing import second_segment_id
from kbert.tasks.extractive_summarization.decode import DEFAULT_SENTENCES
from kbert.tasks.graph.signatures import STRINGS, add_ids_endpoint, run_model

# `clean_text`'s whitespace (what str.split() splits at) and deleted characters, in RE2.
_SPACE = r"[\s\p{Z}\x0b\x1c-\x1f\x85]+"
_MARK = "\x1e"  # a record separator: gone from every text by the time it is placed


def split_sentences(text):
    """Documents [batch] -> their sentences, ragged [batch, (sentences)], as
    `kbert.data.corpora.split_sentences`."""
    paragraphs = tf.strings.split(tf.strings.regex_replace(text, r"\n\s*\n", _MARK), _MARK)
    flat = tf.strings.regex_replace(paragraphs.flat_values, _SPACE, " ")
    flat = tf.strings.regex_replace(flat, r"\p{C}", "")
    flat = tf.strings.strip(tf.strings.regex_replace(flat, " +", " "))
    flat = tf.strings.regex_replace(flat, r"([.!?]) ([\"'(\[]?[A-Z0-9])", "\\1" + _MARK + "\\2")
    sentences = paragraphs.with_flat_values(tf.strings.split(flat, _MARK)).merge_dims(1, 2)
    return tf.ragged.boolean_mask(sentences, tf.strings.length(sentences) > 0)


def _windows(lengths, documents, sequence_length):
    """Per sentence (flat): its window (row), its [CLS] position in it and its place among
    the window's sentences, as `features.windows` cuts them."""
    count = tf.shape(lengths)[0]

    def step(i, window, used, place, rows, starts, places):
        new = tf.logical_or(tf.equal(i, 0), tf.logical_or(
            tf.not_equal(documents[i], documents[tf.maximum(i - 1, 0)]),
            used + lengths[i] > sequence_length))
        window = tf.where(new, window + 1, window)
        used = tf.where(new, 0, used)
        place = tf.where(new, 0, place)
        return (i + 1, window, used + lengths[i], place + 1, rows.write(i, window),
                starts.write(i, used), places.write(i, place))

    arrays = [tf.TensorArray(tf.int32, size=count) for _ in range(3)]
    _, windows, _, _, rows, starts, places = tf.while_loop(
        lambda i, *_: i < count, step, (0, -1, 0, 0, *arrays))
    return rows.stack(), starts.stack(), places.stack(), windows + 1


def _trigram_hashes(sentences):
    words = tf.strings.split(tf.strings.strip(tf.strings.regex_replace(
        tf.strings.lower(sentences, encoding="utf-8"), r"[^\p{L}\p{N}_]+", " ")))
    return tf.strings.to_hash_bucket_fast(tf.strings.ngrams(words, 3, separator=" "),
                                          2 ** 62)


def _select(scores, documents, trigrams, count, trigram_blocking, candidates):
    """Per sentence (flat): chosen or not, by `decode.select` within each document, among
    the `candidates` (bool, per sentence)."""
    total = tf.shape(scores)[0]
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
        return k + 1, tf.tensor_scatter_nd_update(chosen, [[i]], [pick])

    _, chosen = tf.while_loop(lambda k, _: k < total, step,
                              (0, tf.zeros([total], tf.bool)))
    return chosen


def summarizer(model, tokenizer, sequence_length, count=DEFAULT_SENTENCES,
               trigram_blocking=True):
    """The graph function documents [batch] -> summaries (`serving_default`'s outputs): at
    most `count` sentences, with or without trigram blocking."""
    second = second_segment_id(tokenizer)
    first_only = getattr(model, "windows", "all") == "first"

    def summarize(text):
        sentences = split_sentences(text)
        documents = tf.cast(sentences.value_rowids(), tf.int32)
        pieces = tokenizer.tokenize(sentences.flat_values)[:, :sequence_length - 2]
        lengths = tf.cast(pieces.row_lengths(), tf.int32) + 2
        rows, starts, places, windows = _windows(lengths, documents, sequence_length)
        total = tf.shape(lengths)[0]
        ids = tf.concat([tf.fill([total, 1], tokenizer.cls_id), tf.cast(pieces, tf.int32),
                         tf.fill([total, 1], tokenizer.sep_id)], axis=1)
        token_rows = tf.gather(rows, ids.value_rowids())
        columns = tf.gather(starts, ids.value_rowids()) + tf.cast(
            tf.ragged.range(ids.row_lengths()).flat_values, tf.int32)
        at = tf.stack([token_rows, columns], axis=1)
        shape = tf.stack([windows, sequence_length])
        segment = tf.gather((places % 2) * second, ids.value_rowids())
        features = {
            "token_ids": tf.tensor_scatter_nd_update(
                tf.fill(shape, tokenizer.pad_id), at, ids.flat_values),
            "segment_ids": tf.scatter_nd(at, segment, shape),
            "padding_mask": tf.scatter_nd(at, tf.ones_like(segment), shape)}
        logits = run_model(model, features)
        scores = tf.sigmoid(tf.gather_nd(logits, tf.stack([rows, starts], axis=1)))
        candidates = tf.ones_like(rows, tf.bool)
        if first_only:  # the sentences in their document's first window (its lowest row)
            candidates = tf.equal(rows, tf.gather(tf.math.segment_min(rows, documents),
                                                  documents))
        chosen = _select(scores, documents, _trigram_hashes(sentences.flat_values), count,
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


def add_endpoints(archive, model, tokenizer, sequence_length):
    """An `ExtractiveSummarizer`'s `serving_default` (documents) and `serving_ids` on the
    ExportArchive `archive`."""
    def serve_ids(features):
        return {"scores": tf.sigmoid(run_model(model, features))}

    archive.add_endpoint("serving_default", summarizer(model, tokenizer, sequence_length),
                         [STRINGS])
    add_ids_endpoint(archive, model, serve_ids)
