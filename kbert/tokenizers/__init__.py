"""Tokenizers (TensorFlow + tensorflow-text; not needed by kbert.layers / kbert.models)."""

from kbert.tokenizers.byte_pair_tokenizer import BytePairTokenizer
from kbert.tokenizers.sentence_piece_tokenizer import SentencePieceTokenizer
from kbert.tokenizers.tokenizer_json import load_tokenizer_json, tokenizer_from_json
from kbert.tokenizers.word_piece_tokenizer import (
    SPECIAL_TOKENS,
    WordPieceTokenizer,
    read_vocabulary,
)

__all__ = ["SPECIAL_TOKENS", "BytePairTokenizer", "SentencePieceTokenizer",
           "WordPieceTokenizer", "load_tokenizer_json", "read_vocabulary",
           "tokenizer_from_json"]
