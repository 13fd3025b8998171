"""Tokenizers (TensorFlow + tensorflow-text; not needed by kbert.layers / kbert.models)."""

from kbert.tokenizers.word_piece_tokenizer import (
    SPECIAL_TOKENS,
    WordPieceTokenizer,
    read_vocabulary,
)

__all__ = ["SPECIAL_TOKENS", "WordPieceTokenizer", "read_vocabulary"]
