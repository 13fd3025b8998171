"""What the fine-tuning pipelines share: the feature and label names, packing, batching.

Every task dataset yields `(features, labels)` for `model.fit`, dicts of static-shape tensors:

- features (all tasks): `token_ids`, `segment_ids`, `padding_mask`, int32 [B, S];
- classification: `labels` int32 [B] (float32 [B] for regression);
- tagging: `labels` int32 [B, S] and `label_weights` float32 [B, S] (1 on the first
  wordpiece of each word, 0 on the other pieces, the specials and the padding);
- question answering: `start_positions`, `end_positions` int32 [B] (0 = [CLS]: no answer,
  or the answer is not whole in this window).
"""

import numpy as np
import tensorflow as tf

TOKEN_IDS = "token_ids"
SEGMENT_IDS = "segment_ids"
PADDING_MASK = "padding_mask"
LABELS = "labels"
LABEL_WEIGHTS = "label_weights"
START_POSITIONS = "start_positions"
END_POSITIONS = "end_positions"

FEATURE_KEYS = (TOKEN_IDS, SEGMENT_IDS, PADDING_MASK)
CLASSIFICATION_LABEL_KEYS = (LABELS,)
TAGGING_LABEL_KEYS = (LABELS, LABEL_WEIGHTS)
QUESTION_ANSWERING_LABEL_KEYS = (START_POSITIONS, END_POSITIONS)

AUTOTUNE = tf.data.AUTOTUNE


class DataError(ValueError):
    """Bad task data; the message names the file (or TFDS dataset) and the row."""


def check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def pair_separators(tokenizer):
    """How many separators stand between the two texts of a pair: 1 for BERT's
    [CLS] A [SEP] B [SEP], 2 for RoBERTa's <s> A </s></s> B </s> (the tokenizer's
    `pair_separators`; transformers' `build_inputs_with_special_tokens`)."""
    count = getattr(tokenizer, "pair_separators", 1)
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise ValueError(f"The tokenizer's `pair_separators` must be an integer >= 1, got "
                         f"{count!r}.")
    return int(count)


def second_segment_id(tokenizer):
    """The segment id of a pair's second text: 1 (BERT's token type B), or 0 where the pair
    is packed as RoBERTa's (two separators): RoBERTa has one segment type
    (type_vocab_size 1) and transformers' RobertaTokenizer gives token_type_ids all 0."""
    return 1 if pair_separators(tokenizer) == 1 else 0


def special_count(tokenizer, pair):
    """How many special tokens `pack_segments` adds to one text (2) or to a pair (3, or 4 for
    RoBERTa)."""
    return 2 + (pair_separators(tokenizer) if pair else 0)


def pack_segments(tokenizer, segments, sequence_length):
    """[CLS] A [SEP] (B [SEP]) from ragged ids [batch, (pieces)], in the graph; RoBERTa's
    pair is <s> A </s></s> B </s> (`pair_separators`), all of it segment 0.

    The one packing of fine-tuning data (`classification_dataset`) and of the exported
    string-in signatures (`kbert.export`). Pairs are truncated as BERT's
    `_truncate_seq_pair` does (longest first: the longer segment loses its last token until
    the pair fits, B on ties): the round-robin trimmer keeps the same lengths, within a
    budget of `sequence_length` less every special token.

    Args:
        tokenizer: gives `cls_id`, `sep_id`, `pad_id` and `pair_separators`.
        segments: one or two `tf.RaggedTensor`s [batch, (pieces)] of int ids.
        sequence_length: the padded length S; longer inputs are truncated.
    Returns:
        A dict of int32 [batch, S] tensors: `token_ids`, `segment_ids`, `padding_mask`.
    """
    import tensorflow_text as tf_text  # only where a tokenizer (tensorflow-text) is in use

    segments = list(segments)
    if len(segments) not in (1, 2):
        raise ValueError(f"pack_segments takes one text or a pair, got {len(segments)} "
                         "segments.")
    pair = len(segments) == 2
    budget = sequence_length - special_count(tokenizer, pair)
    if budget < 0:
        raise ValueError(f"sequence_length={sequence_length} is shorter than the "
                         f"{special_count(tokenizer, pair)} special tokens of "
                         f"{'a pair' if pair else 'one text'}.")
    trimmed = tf_text.RoundRobinTrimmer(max_seq_length=budget).trim(segments)
    cls = tf.constant(tokenizer.cls_id, trimmed[0].dtype)
    sep = tf.constant(tokenizer.sep_id, trimmed[0].dtype)
    rows = trimmed[0].nrows()
    parts = [tf.fill([rows, 1], cls), trimmed[0], tf.fill([rows, 1], sep)]
    if pair:  # the first [SEP] is above: the others, B and its [SEP]
        parts += [tf.fill([rows, pair_separators(tokenizer) - 1], sep), trimmed[1],
                  tf.fill([rows, 1], sep)]
    ids = tf.concat(parts, axis=1)
    # B's first position: after [CLS], A and the separators (these are segment 0, as in
    # the pipelines' `pack`).
    first = trimmed[0].row_lengths() + 1 + (pair_separators(tokenizer) if pair else 1)
    positions = tf.ragged.range(ids.row_lengths())
    segment_ids = tf.cast(positions >= first[:, None], tf.int32) * (
        second_segment_id(tokenizer) if pair else 0)
    token_ids, padding_mask = tf_text.pad_model_inputs(ids, sequence_length,
                                                       pad_value=tokenizer.pad_id)
    segment_ids, _ = tf_text.pad_model_inputs(segment_ids, sequence_length)
    return {TOKEN_IDS: tf.cast(token_ids, tf.int32),
            SEGMENT_IDS: tf.cast(segment_ids, tf.int32),
            PADDING_MASK: tf.cast(padding_mask, tf.int32)}


def packed_row(first, second, sequence_length, cls_id, sep_id, pad_id, separators=1,
               second_segment=1):
    """One row in numpy, as `pack_segments` packs it: [CLS] first [SEP] (second [SEP]),
    padded; the caller made it fit. A pair has `separators` [SEP]s between its texts (2 for
    RoBERTa: `pair_separators(tokenizer)`) and `second` in segment `second_segment`
    (`second_segment_id(tokenizer)`).

    Returns (token_ids, segment_ids, padding_mask), int32 [sequence_length] each, and the
    position of `second`'s first token (or of the padding when there is no `second`).
    """
    token_ids = np.full(sequence_length, pad_id, np.int32)
    segment_ids = np.zeros(sequence_length, np.int32)
    padding_mask = np.zeros(sequence_length, np.int32)
    end = len(first) + 2
    token_ids[0] = cls_id
    token_ids[1 : end - 1] = first
    token_ids[end - 1] = sep_id
    if second is not None:
        token_ids[end : end + separators - 1] = sep_id
        end += separators - 1
    offset = end
    if second is not None:
        token_ids[end : end + len(second)] = second
        end += len(second)
        token_ids[end] = sep_id
        end += 1
        segment_ids[offset:end] = second_segment
    padding_mask[:end] = 1
    return token_ids, segment_ids, padding_mask, offset


def batched(data, batch_size, training, shuffle_buffer, seed, drop_remainder, repeat):
    """Shuffles (when training), batches and prefetches a dataset of examples.

    `drop_remainder=None` drops the last partial batch when training (static batch size,
    TPU) and keeps it otherwise (every example predicted).
    """
    check_int("batch_size", batch_size, 1)
    if drop_remainder is None:
        drop_remainder = bool(training)
    if repeat:
        data = data.repeat()
    if training and shuffle_buffer:
        data = data.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=not repeat)
    return data.batch(batch_size, drop_remainder=drop_remainder)


def arrays_dataset(features, labels, batch_size=32, training=False, shuffle_buffer=10_000,
                   seed=0, drop_remainder=None, repeat=False):
    """Batches of `(features, labels)` (or `features` alone when `labels` is None) from dicts
    of numpy arrays that share their first dimension."""
    elements = features if labels is None else (features, labels)
    data = tf.data.Dataset.from_tensor_slices(elements)
    data = batched(data, batch_size, training, shuffle_buffer, seed, drop_remainder, repeat)
    return data.prefetch(AUTOTUNE)
