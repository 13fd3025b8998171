"""Fill-mask in TFLite (`kbert.tasks.graph.tflite_serving`), the literal "[MASK]" kept as
one token (`pieces_with_literal`)."""

import tensorflow as tf
import tensorflow_text as tf_text

from kbert.tasks.fill_mask.decode import candidates
from kbert.tasks.graph import tflite_serving
from kbert.tasks.graph.signatures import STRINGS, run_model
from kbert.tasks.graph.tflite_packing import dense as _dense
from kbert.tasks.graph.tflite_packing import pack_dense, pieces_with_offsets


def _literal_starts(text, literal):
    """Where `literal` (bytes) starts in each text, by tensorflow-text's `ByteSplitter`
    (converted to `TFText>ByteSplitWithOffsets`, which tensorflow-text's registrar runs in
    TFLite) and comparisons: bool [B, N + len(literal)] (N: the longest text's bytes; never
    empty)."""
    size = len(literal)
    data = tf.cast(tf_text.ByteSplitter().split(text), tf.int32).to_tensor(default_value=-1)
    width = tf.shape(data)[1] + size
    data = tf.concat([data, tf.fill([tf.shape(data)[0], 2 * size], -1)], axis=1)
    found = tf.ones([tf.shape(data)[0], width], tf.bool)
    for j, byte in enumerate(literal):
        found &= tf.equal(data[:, j:j + width], byte)
    return found


def pieces_with_literal(tokenizer, fast, text, literal, token_id, width):
    """Wordpieces of `text` in which each occurrence of `literal` (the mask token "[MASK]",
    case and all, anywhere in the text) is the one piece `token_id`, as kbert's tokenizer
    with `split_special_tokens=False` gives it (FastBertTokenizer splits the literal as
    text: its pieces are found by their byte offsets and merged). Returns the first
    `width` pieces, dense [B, width] (padded with pad_id), and their count [B, 1]."""
    literal = literal.encode("utf-8")
    size = len(literal)
    ids, starts, _ = pieces_with_offsets(fast, text)
    # A literal is at least one piece per `size` bytes: `size * width` pieces hold
    # `width` merged ones.
    reach = size * width
    pieces = _dense(ids, reach, tokenizer.pad_id)
    count = tf.cast(ids.row_lengths(), tf.int32)[:, None]
    starts = tf.cast(starts, tf.int32)
    starts = tf.concat([starts, tf.zeros([tf.shape(starts)[0], reach], tf.int32)], 1)[:, :reach]
    real = tf.range(reach)[None, :] < count
    found = tf.cast(_literal_starts(text, literal), tf.int32)
    last = tf.shape(found)[1] - 1

    def literal_at(offset):  # does a literal start at byte `offset` [B, reach]?
        at = tf.gather(found, tf.clip_by_value(offset, 0, last), batch_dims=1)
        return (at > 0) & (offset >= 0) & (offset <= last)

    first = literal_at(starts) & real
    inside = first
    for j in range(1, size):
        inside |= literal_at(starts - j) & real
    ids = tf.where(first, token_id, pieces)
    keep = real & (first | ~inside)
    # Compaction: the kept pieces moved to the front (a one-hot sum; TFLite has no
    # boolean_mask).
    rank = tf.cumsum(tf.cast(keep, tf.int32), axis=1) - 1
    slot = keep[:, :, None] & tf.equal(rank[:, :, None], tf.range(width)[None, None, :])
    dense = tf.reduce_sum(tf.where(slot, ids[:, :, None], 0), axis=1)  # [B, width]
    kept = tf.reduce_sum(tf.cast(keep, tf.int32), axis=1, keepdims=True)
    dense = tf.where(tf.range(width)[None, :] < kept, dense, tokenizer.pad_id)
    return dense, tf.minimum(kept, width)


def fill_mask(pipe, model, opts, given, *, max_masks=1):
    """A fill-mask pipeline's TFLite graph: `text` string [B] -> the `top_k` likeliest tokens
    at each of the first `max_masks` "[MASK]"s (an option of the export, not of the
    pipeline): `score`, `token` (id), `token_str` [B, max_masks, top_k] (0, -1 and "" at a
    mask the text lacks), `num_masks` [B] (every mask in the model's window, also past
    `max_masks`), `mask_positions` [B, max_masks] and the model's `token_ids`,
    `padding_mask` [B, S]."""
    tflite_serving.word_piece_only(
        pipe, "fill-mask model", "the mask literal is found by FastBertTokenizer's byte offsets")
    if isinstance(max_masks, bool) or not isinstance(max_masks, int) or max_masks < 1:
        raise ValueError(f"max_masks must be a positive integer (the masks per text the "
                         f"TFLite model fills), got {max_masks!r}.")
    truncation, max_length = pipe.tokenization(opts, "tokenizer_kwargs")
    tflite_serving.truncating(pipe, truncation)
    tokenizer = pipe.tokenizer
    top_k, targets = pipe.top_k_and_targets(opts)
    top_k = candidates(top_k, targets, tokenizer.vocabulary_size)
    if targets is not None:
        targets = [int(t) for t in targets]
    strings = [pipe.encoder.decode([i]) for i in range(tokenizer.vocabulary_size)]
    names = tf.constant(strings + [""])  # the last: no token
    fast = tokenizer.tflite_tokenizer()
    length = tflite_serving.length(pipe, max_length)
    mask_id = tokenizer.mask_id
    literal = tokenizer.vocabulary[mask_id]

    def serve(text):
        pieces, count = pieces_with_literal(tokenizer, fast, text, literal, mask_id, length - 2)
        features = pack_dense(tokenizer, pieces, count, length)
        token_ids = features["token_ids"]
        position = tf.range(length)[None, :]
        is_mask = tf.equal(token_ids, mask_id) & (features["padding_mask"] > 0)
        # The first `max_masks` masks: the largest length - position.
        key, _ = tf.math.top_k(tf.where(is_mask, length - position, 0), k=max_masks)
        present = key > 0
        positions = tf.where(present, length - key, 0)
        logits = run_model(model, {**features, "mask_positions": positions})["mlm_logits"]
        probabilities = tf.nn.softmax(logits)  # [B, M, V]
        if targets is not None:
            probabilities = tf.gather(probabilities, targets, axis=-1)
        scores, index = tf.math.top_k(probabilities, k=top_k)  # [B, M, K]
        tokens = index if targets is None else tf.gather(tf.constant(targets, tf.int32),
                                                          index)
        present = present[:, :, None]
        return {"score": tf.where(present, scores, 0.0),
                "token": tf.where(present, tokens, -1),
                "token_str": tf.gather(names, tf.where(present, tokens, len(strings))),
                "num_masks": tf.reduce_sum(tf.cast(is_mask, tf.int32), axis=1),
                "mask_positions": tf.where(present[:, :, 0], positions, -1),
                "token_ids": token_ids, "padding_mask": features["padding_mask"]}

    return fast, {"serving_default": (serve, [STRINGS])}, length


PIPELINES = {"fill-mask": fill_mask}
