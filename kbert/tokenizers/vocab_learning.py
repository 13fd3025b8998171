"""WordPiece vocabulary learning on tensorflow-text's `bert_vocab_from_dataset`."""

import os

import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset

from kbert.tokenizers.word_piece_tokenizer import SPECIAL_TOKENS, normalize

RESERVED_TOKENS = list(SPECIAL_TOKENS.values())  # [PAD]=0, [UNK], [CLS], [SEP], [MASK]


def learn_vocabulary(documents, vocab_size, lowercase=True, max_sentences=None, batch_size=1024):
    """Learns a WordPiece vocabulary from a dataset of documents (string vectors).

    Args:
        documents: a `tf.data.Dataset` whose elements are string vectors (sentences), as made
            by `kbert.data.corpora`; a dataset of plain strings works too.
        vocab_size: target size, the special tokens included. tensorflow-text's learner
            treats it as a target, so the result can be a little smaller.
        lowercase: lower-case and strip accents first (for uncased models).
        max_sentences: learn from the first this many sentences only (`None`: all).

    Returns:
        the token list: [PAD], [UNK], [CLS], [SEP], [MASK], then the learned tokens.
    """
    if not isinstance(vocab_size, int) or vocab_size <= len(RESERVED_TOKENS):
        raise ValueError(
            f"vocab_size must be an integer > {len(RESERVED_TOKENS)} (the special tokens), "
            f"got {vocab_size!r}."
        )
    sentences = documents
    if len(documents.element_spec.shape) == 1:
        sentences = documents.unbatch()
    if max_sentences is not None:
        sentences = sentences.take(max_sentences)
    # The same normalisation as WordPieceTokenizer, so that every learned token is reachable.
    batches = sentences.batch(batch_size).map(lambda text: normalize(text, bool(lowercase)))
    vocabulary = bert_vocab_from_dataset.bert_vocab_from_dataset(
        batches.prefetch(2),
        vocab_size=vocab_size,
        reserved_tokens=RESERVED_TOKENS,
        bert_tokenizer_params={"lower_case": False},
        # With the default count threshold (10), small corpora fall far short of the target.
        learn_params={"lower_thresh": 1},
    )
    if len(vocabulary) <= len(RESERVED_TOKENS):
        raise ValueError("The corpus gave no vocabulary: is it empty?")
    return vocabulary


def write_vocabulary(vocabulary, path):
    """Writes one token per line (the line number is the id)."""
    folder = os.path.dirname(path)
    if folder:
        tf.io.gfile.makedirs(folder)
    with tf.io.gfile.GFile(path, "w") as f:
        f.write("".join(token + "\n" for token in vocabulary))
