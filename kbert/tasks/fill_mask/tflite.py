"""Fill-mask in TFLite, on TFLite's built-in ops and tensorflow-text's kernels
(`pipeline.export_tflite` of a fill-mask pipeline; a question answerer's is
`kbert.tasks.question_answering.tflite`, a token classifier's
`kbert.tasks.token_classification.tflite`).

Offsets are UTF-8 byte offsets into the text as given (`text.encode("utf-8")[start:end]`):
what tensorflow-text's `FastBertNormalize` and `FastWordpieceTokenizeWithOffsets` give,
with TFLite kernels; the host turns bytes into characters
(`kbert.tokenizers.alignment.char_offset`). The text must be valid UTF-8 (TFLite has
no kernel to repair it). A fill-mask model finds the literal "[MASK]" in the text's bytes
(`ByteSplitter`, converted to `TFText>ByteSplitWithOffsets`, which tensorflow-text's
registrar runs in TFLite) and merges the pieces FastBertTokenizer split it into.
"""

import tensorflow as tf
import tensorflow_text as tf_text

from kbert.tasks.fill_mask.decode import candidates
from kbert.tasks.graph import tflite_serving
from kbert.tasks.graph.signatures import STRINGS, run_model
from kbert.tasks.graph.tflite_offsets import dense as _dense
from kbert.tasks.graph.tflite_offsets import pieces_with_offsets
from kbert.tasks.graph.tflite_packing import pack_dense


def _literal_starts(text, literal):
    """Where `literal` (bytes) starts in each text, by tensorflow-text's `ByteSplitter` (a
    TFLite kernel) and comparisons: bool [B, N + len(literal)] (N: the longest text's
    bytes; never empty)."""
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
    starts = tf.concat([starts, tf.zeros([tf.shape(starts)[0], reach], tf.int32)], 1)
    starts = starts[:, :reach]
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


def fill_mask_serving(tokenizer, fast, run, sequence_length, max_masks, top_k, targets,
                      token_strings):
    """`text` string [B] -> the `top_k` likeliest tokens at each of the first `max_masks`
    "[MASK]"s: `score`, `token` (id), `token_str` [B, max_masks, top_k] (0, -1 and "" at
    a mask the text lacks), `num_masks` [B] (every mask in the model's window, also past
    `max_masks`), `mask_positions` [B, max_masks] and the model's `token_ids`,
    `padding_mask` [B, S]. `targets`: the ids to score (None: every token);
    `token_strings`: each id's decoded string."""
    mask_id = tokenizer.mask_id
    budget = sequence_length - 2
    names = tf.constant(list(token_strings) + [""])  # the last: no token
    absent = len(token_strings)
    literal = tokenizer.vocabulary[mask_id]

    def serve(text):
        pieces, count = pieces_with_literal(tokenizer, fast, text, literal, mask_id, budget)
        features = pack_dense(tokenizer, pieces, count, sequence_length)
        token_ids = features["token_ids"]
        position = tf.range(sequence_length)[None, :]
        is_mask = tf.equal(token_ids, mask_id) & (features["padding_mask"] > 0)
        # The first `max_masks` masks: the largest sequence_length - position.
        key, _ = tf.math.top_k(tf.where(is_mask, sequence_length - position, 0), k=max_masks)
        present = key > 0
        positions = tf.where(present, sequence_length - key, 0)
        logits = run({**features, "mask_positions": positions})["mlm_logits"]
        probabilities = tf.nn.softmax(tf.cast(logits, tf.float32))  # [B, M, V]
        if targets is not None:
            probabilities = tf.gather(probabilities, targets, axis=-1)
        scores, index = tf.math.top_k(probabilities, k=top_k)  # [B, M, K]
        tokens = index if targets is None else tf.gather(tf.constant(targets, tf.int32),
                                                          index)
        present = present[:, :, None]
        return {"score": tf.where(present, scores, 0.0),
                "token": tf.where(present, tokens, -1),
                "token_str": tf.gather(names, tf.where(present, tokens, absent)),
                "num_masks": tf.reduce_sum(tf.cast(is_mask, tf.int32), axis=1),
                "mask_positions": tf.where(present[:, :, 0], positions, -1),
                "token_ids": token_ids, "padding_mask": features["padding_mask"]}

    return serve


def fill_mask(pipe, model, opts, given, *, max_masks=1):
    """`pipeline.export_tflite` of `pipe`, a fill-mask pipeline: (the TFLite tokenizer, its
    endpoints). `max_masks` (an option of the export, not of the pipeline): the masks per
    text it fills."""
    tflite_serving.pipeline_word_piece_only(
        pipe, "fill-mask model", "the mask literal is found by FastBertTokenizer's byte offsets")
    if isinstance(max_masks, bool) or not isinstance(max_masks, int) or max_masks < 1:
        raise ValueError(f"max_masks must be a positive integer (the masks per text the "
                         f"TFLite model fills), got {max_masks!r}.")
    truncation, max_length = pipe.tokenization(opts, "tokenizer_kwargs")
    tflite_serving.truncating(pipe, truncation)
    top_k, targets = pipe.top_k_and_targets(opts)
    top_k = candidates(top_k, targets, pipe.tokenizer.vocabulary_size)
    if targets is not None:
        targets = [int(t) for t in targets]
    strings = [pipe.encoder.decode([i]) for i in range(pipe.tokenizer.vocabulary_size)]
    fast = tflite_serving.fast_tokenizer(pipe)
    cut = tflite_serving.length(pipe, max_length)
    serve = fill_mask_serving(pipe.tokenizer, fast,
                              lambda features: run_model(model, features),
                              cut, max_masks, top_k, targets, strings)
    return fast, {"serving_default": (serve, [STRINGS])}, cut


# `pipeline.export_tflite` of each pipeline of the task.
PIPELINES = {"fill-mask": fill_mask}
