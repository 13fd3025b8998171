"""`Encoder.encode` of a WordPiece (BERT) tokenizer in the TensorFlow graph, for
`pipeline.export`: each text's ids with the characters of each token in the text as given,
special-token literals as their tokens (`WordPieceTokenizer.graph_encode`).

As in Python: the text is cut at the special-token literals the pipeline keeps (exact
matches, longest first), the rest into words by BERT's rule (`words_graph.split_words`), and
each word is tokenized alone (`words_graph.align`); a token covers the characters its
normalised characters came from, less the characters that normalise to nothing at its end
(`words_graph.trimmed_ends`), as transformers' offsets have them.

(tensorflow-text's `FastBertTokenizer.tokenize_with_offsets` gives offsets into the text too,
but by its own normaliser, which case-folds with NFKC and keeps control characters as spaces:
other ids and offsets than BERT's tokenizer for those characters. The TFLite exports use it,
where no other kernel is at hand: `kbert.tasks.graph.tflite_offsets`.)
"""

import tensorflow as tf

from kbert.tokenizers.literals_graph import split_at_literals
from kbert.tokenizers.words_graph import align, trimmed_ends


def encode(text, tokenizer, specials):
    """Valid UTF-8 strings [B] -> a dict of ragged [B, (tokens)] tensors: `ids` (int32),
    `starts` / `ends` (int32 code points into the text), `literal` (bool: a special literal
    typed in the text), `words` (int32: the token's word, numbered over the batch in order;
    -1 for a special literal) and `codes` (ragged [B, (chars)] int32: the texts' code
    points)."""
    parts, special = split_at_literals(text, specials)  # [B, (parts)]
    is_special = special >= 0
    aligned = align(tf.where(is_special, "", parts.flat_values), tokenizer)
    words, pieces = aligned["words"], aligned["pieces"]
    count = tf.size(pieces.flat_values)
    # Per part, the flat indices of its tokens: its pieces', or (a literal) one after them.
    part_tokens = tf.RaggedTensor.from_row_splits(  # [parts, (tokens)]
        tf.RaggedTensor.from_row_splits(tf.range(count), pieces.row_splits, validate=False),
        words["row_splits"], validate=False).merge_dims(1, 2)
    literal_index = count + tf.cumsum(tf.cast(is_special, tf.int32), exclusive=True)
    part_tokens = tf.concat([part_tokens, tf.RaggedTensor.from_row_lengths(
        tf.boolean_mask(literal_index, is_special), tf.cast(is_special, tf.int64))], axis=1)
    tokens = parts.with_flat_values(part_tokens).merge_dims(1, 2)  # [B, (tokens)]
    # Each part's first character in its text.
    part_chars = tf.strings.length(parts.flat_values, unit="UTF8_CHAR")
    before = tf.cumsum(part_chars, exclusive=True)
    part_start = before - tf.gather(tf.concat([before, [0]], 0),
                                    tf.gather(tf.cast(parts.row_starts(), tf.int32),
                                              tf.cast(parts.value_rowids(), tf.int32)))
    piece_word = tf.cast(pieces.value_rowids(), tf.int32)
    shift = tf.gather(part_start, tf.gather(words["row"], piece_word))
    literal_start = tf.boolean_mask(part_start, is_special)
    literal_ids = tf.boolean_mask(special, is_special)
    flat = {
        "ids": tf.concat([tf.cast(pieces.flat_values, tf.int32), literal_ids], 0),
        "starts": tf.concat([aligned["piece_starts"] + shift, literal_start], 0),
        "ends": tf.concat([trimmed_ends(aligned, tokenizer) + shift,
                           literal_start + tf.boolean_mask(part_chars, is_special)], 0),
        "literal": tf.concat([tf.zeros_like(piece_word, tf.bool),
                              tf.ones_like(literal_ids, tf.bool)], 0),
        "words": tf.concat([piece_word, -tf.ones_like(literal_ids)], 0)}
    out = {name: tokens.with_flat_values(tf.gather(values, tokens.flat_values))
           for name, values in flat.items()}
    out["codes"] = tf.strings.unicode_decode(text, "UTF-8")
    return out
