"""How a tokenizer packs one text or a pair into model inputs: each tokenizer holds a
`PairLayout` (`Tokenizer.layout`: its kind's default, or the `pair_layout=` it was made
with), and this module is the one rule that builds the inputs from it, in numpy and in the
graph:

- `BERT` (BERT, ALBERT, DeBERTa-v3, ELECTRA: WordPiece, SentencePiece): [CLS] A [SEP] B
  [SEP], B and its [SEP] in segment 1;
- `ROBERTA` (RoBERTa's byte-level BPE; XLM-R's SentencePiece): <s> A </s></s> B </s>, all of
  it segment 0 (RoBERTa has one segment type, and transformers' RobertaTokenizer gives
  token_type_ids all 0).

These are transformers' `build_inputs_with_special_tokens` and
`create_token_type_ids_from_sequences`. Model inputs are named `token_ids`, `segment_ids`,
`padding_mask`.
"""

import typing

import numpy as np

TOKEN_IDS = "token_ids"
SEGMENT_IDS = "segment_ids"
PADDING_MASK = "padding_mask"


class PairLayout(typing.NamedTuple):
    """How a pair of texts is packed: `separators`, the [SEP]s between the two texts (1 for
    BERT's [CLS] A [SEP] B [SEP], 2 for RoBERTa's <s> A </s></s> B </s>), and
    `second_segment`, the segment id of the second text and its [SEP] (BERT's 1; RoBERTa's
    0, its one segment type)."""

    separators: int = 1
    second_segment: int = 1

    @classmethod
    def of(cls, value):
        """`value` as a checked `PairLayout`: a `PairLayout`, a (separators, second_segment)
        pair (as a family record or a saved config holds it) or a name of `LAYOUTS`."""
        if isinstance(value, str):
            if value not in LAYOUTS:
                raise ValueError(f"Unknown pair layout {value!r}. Known: "
                                 f"{', '.join(LAYOUTS)}.")
            return LAYOUTS[value]
        try:
            separators, second = value
        except (TypeError, ValueError):
            raise ValueError(f"A pair layout is a (separators, second_segment) pair or one of "
                             f"{', '.join(LAYOUTS)}, got {value!r}.") from None
        for name, number, least in (("separators", separators, 1),
                                    ("second_segment", second, 0)):
            if isinstance(number, bool) or not isinstance(number, (int, np.integer)) or \
                    number < least:
                raise ValueError(f"The pair layout's `{name}` must be an integer >= {least}, "
                                 f"got {number!r}.")
        return cls(int(separators), int(second))


BERT = PairLayout(1, 1)
ROBERTA = PairLayout(2, 0)
# The layouts by name (a family record's `pair_layout`, `pair_layout="roberta"`).
LAYOUTS = {"bert": BERT, "roberta": ROBERTA}


def layout_of(tokenizer):
    """The `PairLayout` of `tokenizer`: its `layout`; for an object without one, its
    `pair_separators` (1 when it does not say) and `second_segment_id` (when it does not
    say: 1 with one separator, 0 with more, RoBERTa's)."""
    layout = getattr(tokenizer, "layout", None)
    if layout is not None:
        return PairLayout.of(layout)
    count = getattr(tokenizer, "pair_separators", 1)
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise ValueError(f"The tokenizer's `pair_separators` must be an integer >= 1, got "
                         f"{count!r}.")
    second = getattr(tokenizer, "second_segment_id", None)
    return PairLayout.of((count, (1 if count == 1 else 0) if second is None else second))


def pair_separators(tokenizer):
    """How many separators stand between the two texts of a pair (`layout_of`)."""
    return layout_of(tokenizer).separators


def second_segment_id(tokenizer):
    """The segment id of a pair's second text (`layout_of`)."""
    return layout_of(tokenizer).second_segment


def special_count(tokenizer, pair):
    """How many special tokens packing adds to one text (2) or to a pair (3, or 4 for
    RoBERTa)."""
    return 2 + (pair_separators(tokenizer) if pair else 0)


def pair_layout(tokenizer, first, second=None):
    """numpy: [CLS] first [SEP] (second [SEP]) -> (token_ids, segment_ids) int32 [tokens],
    unpadded."""
    cls, sep = tokenizer.cls_id, tokenizer.sep_id
    first = np.asarray(first, np.int32).reshape([-1])
    if second is None:
        ids = np.concatenate([[cls], first, [sep]]).astype(np.int32)
        return ids, np.zeros_like(ids)
    second = np.asarray(second, np.int32).reshape([-1])
    layout = layout_of(tokenizer)
    separators = [sep] * layout.separators
    ids = np.concatenate([[cls], first, separators, second, [sep]]).astype(np.int32)
    segments = np.zeros_like(ids)
    segments[1 + len(first) + len(separators):] = layout.second_segment
    return ids, segments


def packed_row(first, second, sequence_length, cls_id, sep_id, pad_id, separators=1,
               second_segment=1):
    """One row in numpy, as `pack_segments` packs it: [CLS] first [SEP] (second [SEP]),
    padded; the caller made it fit. A pair has `separators` [SEP]s between its texts and
    `second` in segment `second_segment` (a `PairLayout`'s fields; `BERT`'s by default).
    (`Tokenizer.pack_row` packs by the tokenizer's own layout.)

    Returns (token_ids, segment_ids, padding_mask), int32 [sequence_length] each, and the
    position of `second`'s first token (or of the padding when there is no `second`).
    """
    ids, segments = pair_layout(_Ids(cls_id, sep_id, (separators, second_segment)), first,
                                second)
    offset = len(ids) if second is None else 1 + len(first) + separators
    token_ids = np.full(sequence_length, pad_id, np.int32)
    segment_ids = np.zeros(sequence_length, np.int32)
    padding_mask = np.zeros(sequence_length, np.int32)
    token_ids[: len(ids)] = ids
    segment_ids[: len(ids)] = segments
    padding_mask[: len(ids)] = 1
    return token_ids, segment_ids, padding_mask, offset


class _Ids(typing.NamedTuple):
    """The packing attributes of a tokenizer, given one by one (`packed_row`)."""

    cls_id: int
    sep_id: int
    layout: tuple


def concatenated(tokenizer, first, second=None):
    """In the graph: [CLS] first [SEP] (second [SEP]) of ragged ids [B, (pieces)] ->
    ragged (token_ids, segment_ids) [B, (tokens)] (ids in `first`'s dtype, segments int32)."""
    import tensorflow as tf

    rows = first.nrows()
    cls = tf.fill([rows, 1], tf.constant(tokenizer.cls_id, first.dtype))
    sep = tf.fill([rows, 1], tf.constant(tokenizer.sep_id, first.dtype))
    parts = [cls, first, sep]
    segments = [tf.zeros_like(part, tf.int32) for part in parts]
    if second is not None:
        layout = layout_of(tokenizer)
        extra = [sep] * (layout.separators - 1)
        second_id = layout.second_segment
        parts += extra + [second, sep]
        segments += [tf.zeros_like(s, tf.int32) for s in extra] + [
            tf.ones_like(second, tf.int32) * second_id, tf.ones_like(sep, tf.int32) * second_id]
    return tf.concat(parts, axis=1), tf.concat(segments, axis=1)


def pack_to_longest(tokenizer, first, second=None):
    """In the graph: `concatenated` padded to the batch's longest -> `token_ids`,
    `segment_ids`, `padding_mask` int32 [B, S] (the pipelines' exports)."""
    import tensorflow as tf

    token_ids, segment_ids = concatenated(tokenizer, tf.cast(first, tf.int32),
                                          None if second is None else tf.cast(second, tf.int32))
    return {TOKEN_IDS: token_ids.to_tensor(tokenizer.pad_id),
            SEGMENT_IDS: segment_ids.to_tensor(0),
            PADDING_MASK: tf.ones_like(token_ids).to_tensor(0)}


def pack_segments(tokenizer, segments, sequence_length):
    """[CLS] A [SEP] (B [SEP]) from ragged ids [batch, (pieces)], in the graph, padded to
    `sequence_length`, by the tokenizer's `PairLayout` (RoBERTa's pair: <s> A </s></s> B
    </s>, all of it segment 0).

    The one packing of fine-tuning data (`classification_dataset`) and of the exported
    string-in signatures (`kbert.export`). Pairs are truncated as BERT's
    `_truncate_seq_pair` does (longest first: the longer segment loses its last token until
    the pair fits, B on ties): the round-robin trimmer keeps the same lengths, within a
    budget of `sequence_length` less every special token.

    Args:
        tokenizer: gives `cls_id`, `sep_id`, `pad_id` and its `layout`.
        segments: one or two `tf.RaggedTensor`s [batch, (pieces)] of int ids.
        sequence_length: the padded length S; longer inputs are truncated.
    Returns:
        A dict of int32 [batch, S] tensors: `token_ids`, `segment_ids`, `padding_mask`.
    """
    import tensorflow as tf
    import tensorflow_text as tf_text

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
    ids, segment_ids = concatenated(tokenizer, *trimmed)
    token_ids, padding_mask = tf_text.pad_model_inputs(ids, sequence_length,
                                                       pad_value=tokenizer.pad_id)
    segment_ids, _ = tf_text.pad_model_inputs(segment_ids, sequence_length)
    return {TOKEN_IDS: tf.cast(token_ids, tf.int32),
            SEGMENT_IDS: tf.cast(segment_ids, tf.int32),
            PADDING_MASK: tf.cast(padding_mask, tf.int32)}
