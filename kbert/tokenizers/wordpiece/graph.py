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
where no other kernel is at hand: `kbert.tasks.graph.tflite_packing`.)
"""

import tensorflow as tf

from kbert.tokenizers.literals_graph import part_starts, split_at_literals, with_literals
from kbert.tokenizers.words_graph import align, trimmed_ends


def encode(text, tokenizer, specials):
    """Valid UTF-8 strings [B] -> a dict of ragged [B, (tokens)] tensors: `ids` (int32),
    `starts` / `ends` (int32 code points into the text), `literal` (bool: a special literal
    typed in the text), `words` (int32: the token's word, numbered over the batch in order;
    -1 for a special literal) and `codes` (ragged [B, (chars)] int32: the texts' code
    points)."""
    parts, special = split_at_literals(text, specials)  # [B, (parts)]
    aligned = align(tf.where(special >= 0, "", parts.flat_values), tokenizer)
    words, pieces = aligned["words"], aligned["pieces"]
    token_parts = tf.RaggedTensor.from_row_splits(  # [parts, (tokens)]
        tf.RaggedTensor.from_row_splits(tf.range(tf.size(pieces.flat_values)),
                                        pieces.row_splits, validate=False),
        words["row_splits"], validate=False).merge_dims(1, 2)
    piece_word = tf.cast(pieces.value_rowids(), tf.int32)
    shift = tf.gather(part_starts(parts)[0], tf.gather(words["row"], piece_word))
    return with_literals(text, parts, special, token_parts, {
        "ids": pieces.flat_values, "starts": aligned["piece_starts"] + shift,
        "ends": trimmed_ends(aligned, tokenizer) + shift, "words": piece_word})
