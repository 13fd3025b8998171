"""The pretraining input pipeline: documents -> tokens (any kbert tokenizer) -> pairs ->
batches -> masking.

Everything runs on the host; the model only ever sees static-shape int tensors:
`features = {token_ids, segment_ids, padding_mask, mask_positions}` (with `fill_rows` and
`document_ids=True`, `document_ids` too) and
`labels = {mask_ids, mask_weights[, next_sentence_labels]}`.
"""

import numpy as np
import tensorflow as tf

from kbert.data.masking import Masker
from kbert.data.pairs import PairBuilder

AUTOTUNE = tf.data.AUTOTUNE
FEATURE_KEYS = ("token_ids", "segment_ids", "padding_mask", "mask_positions")


def tokenized_documents(documents, tokenizer, group=64):
    """Documents (string vectors) -> groups of up to `group` documents, each as (flat token
    ids, tokens per sentence, sentences per document), tokenized in parallel.

    Groups, not single documents: every element a Python loop takes from a tf.data iterator
    costs about 0.2 ms, as much as tokenizing a short document."""

    def tokenize(group_documents):  # [documents, sentences], ragged unless all alike
        if not isinstance(group_documents, tf.RaggedTensor):
            group_documents = tf.RaggedTensor.from_tensor(group_documents)
        ids = tokenizer.tokenize(group_documents.flat_values)  # ragged [sentences, tokens]
        return (ids.flat_values, tf.cast(ids.row_lengths(), tf.int32),
                tf.cast(group_documents.row_lengths(), tf.int32))

    if documents.element_spec.shape.rank is None:  # ragged_batch would batch densely
        documents = documents.map(lambda document: tf.ensure_shape(document, [None]))
    return documents.ragged_batch(group).map(tokenize, num_parallel_calls=AUTOTUNE,
                                             deterministic=True)


def _split_documents(values, sentence_lengths, document_lengths):
    """One group of `tokenized_documents` -> a list per document of its sentences' ids."""
    sentences = np.split(values, np.cumsum(sentence_lengths)[:-1]) if len(sentence_lengths) \
        else []
    bounds = np.cumsum(document_lengths)
    return [sentences[end - n:end] for n, end in zip(document_lengths, bounds)]


def examples(documents, tokenizer, sequence_length, sentence_task="nsp", short_seq_prob=0.1,
             seed=0, random_buffer=1000, pack_across_documents=False, fill_rows=False,
             document_ids=False):
    """Unmasked fixed-length examples (see `PairBuilder`), as a dataset of dicts."""
    if document_ids and not fill_rows:
        raise ValueError("document_ids=True numbers the documents of a packed row: it needs "
                         "fill_rows=True.")
    builder_args = dict(
        sequence_length=sequence_length,
        sentence_task=sentence_task,
        cls_id=tokenizer.cls_id,
        sep_id=tokenizer.sep_id,
        pad_id=tokenizer.pad_id,
        short_seq_prob=short_seq_prob,
        seed=seed,
        random_buffer=random_buffer,
        pack_across_documents=pack_across_documents,
        fill_rows=fill_rows,
    )
    PairBuilder(**builder_args)  # bad arguments fail here, before any work
    tokenized = tokenized_documents(documents, tokenizer).prefetch(AUTOTUNE)

    keys = ["token_ids", "segment_ids", "padding_mask"]
    if document_ids:
        keys.append("document_ids")
    if sentence_task != "none":
        keys.append("next_sentence_labels")

    def generate():
        # Examples go out in stacks of up to 64 (fewer Python -> TF hand-overs), unbatched below.
        builder = PairBuilder(**builder_args)  # a fresh, equally seeded builder per pass
        documents = (document for group in tokenized.as_numpy_iterator()
                     for document in _split_documents(*group))
        stack = []
        for example in builder.examples(documents):
            stack.append(example)
            if len(stack) == 64:
                yield {k: np.stack([e[k] for e in stack]) for k in keys}
                stack = []
        if stack:
            yield {k: np.stack([e[k] for e in stack]) for k in keys}

    spec = {k: tf.TensorSpec([None] if k == "next_sentence_labels" else [None, sequence_length],
                             tf.int32) for k in keys}
    return tf.data.Dataset.from_generator(generate, output_signature=spec).unbatch()


def split_features_and_labels(example):
    packed = ("document_ids",) if "document_ids" in example else ()  # asked for
    features = {k: example[k] for k in FEATURE_KEYS + packed}
    labels = {k: example[k] for k in ("mask_ids", "mask_weights", "next_sentence_labels")
              if k in example}
    return features, labels


def pretraining_dataset(documents, tokenizer, sequence_length=128, max_predictions=20,
                        batch_size=32, sentence_task="nsp", masking="token",
                        masked_lm_prob=0.15, mask_token_rate=0.8, random_token_rate=0.1,
                        max_ngram=3, short_seq_prob=0.1, seed=0, shuffle_buffer=1000, drop_remainder=True,
                        random_buffer=1000, repeat=False, pack_across_documents=False,
                        fill_rows=False, document_ids=False):
    """Batches of (features, labels) for `BertPretrainer.fit`, masked afresh every epoch.

    Args:
        documents: a dataset of documents (string vectors), e.g. `kbert.data.corpora.*`.
        tokenizer: a kbert tokenizer (`WordPieceTokenizer`, `SentencePieceTokenizer`): it
            tokenizes, gives the special ids, and its `starts_word` rule marks the words
            of whole-word and n-gram masking.
        sequence_length, max_predictions: the static shapes [B, S] and [B, P].
        sentence_task: "nsp", "sop" or "none" (one segment of whole sentences, no label).
        pack_across_documents: with sentence_task "none", a segment takes the sentences of
            consecutive documents, a separator between two (RoBERTa's FULL-SENTENCES); else
            one document's (see `PairBuilder`).
        fill_rows: with pack_across_documents, ModernBERT's packed sequences: [CLS] document
            [SEP] after [CLS] document [SEP], cut every `sequence_length` tokens (every row
            full; see `PairBuilder`).
        document_ids: with fill_rows, the features add `document_ids` [B, S] (1, 2, ... for
            the documents of a row, 0 on padding), which `ModernBertPretrainer(...,
            document_ids=True)` takes to keep each document to itself. Off by default: a
            Keras model given a dict with a key it has no input for maps the dict's values
            to its inputs by sorted position (Keras 3.15), so an unexpected `document_ids`
            would feed one input with another's tensor.
        masking, masked_lm_prob, mask_token_rate, random_token_rate, max_ngram: see `Masker`.
        short_seq_prob: probability of a shorter target length for a document.
        seed: every random choice derives from it: the same seed gives the same batches;
            each new pass over the dataset (epoch) draws new masks.
        shuffle_buffer: examples shuffled together (0: no shuffling).
        drop_remainder: keep the batch dimension static (needed on TPU and for training).
        repeat: False: one pass; every new iterator over the dataset (an epoch of
            `fit(epochs=...)`) reshuffles and draws new masks, so what an iterator yields
            depends on how many were made before it. True: an endless stream, reshuffled and
            masked afresh on every pass, that every new iterator yields identically from its
            start (what a resumable run needs: `skip(steps_done)` restores the position, and
            tf.distribute may make extra iterators).
    """
    masker = Masker(
        tokenizer, max_predictions, masked_lm_prob=masked_lm_prob,
        mask_token_rate=mask_token_rate, random_token_rate=random_token_rate, masking=masking,
        max_ngram=max_ngram,
    )
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}.")
    data = examples(documents, tokenizer, sequence_length, sentence_task, short_seq_prob, seed,
                    random_buffer, pack_across_documents, fill_rows, document_ids)
    if repeat:  # shuffling after repeat() mixes the passes from a state fixed by `seed`
        data = data.repeat()
    if shuffle_buffer:
        data = data.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=not repeat)
    data = data.batch(batch_size, drop_remainder=drop_remainder)
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=not repeat)

    def mask(batch, batch_seed):
        masked, labels = masker(batch, batch_seed)
        out = {**masked, **labels}
        for key in ("mask_positions", "mask_ids", "mask_weights"):
            out[key].set_shape([batch_size if drop_remainder else None, max_predictions])
        return split_features_and_labels(out)

    data = tf.data.Dataset.zip(data, seeds).map(mask, num_parallel_calls=AUTOTUNE,
                                                deterministic=True)
    return data.prefetch(AUTOTUNE)
