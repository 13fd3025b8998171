"""Tokenizers (TensorFlow + tensorflow-text; not needed by kbert.layers / kbert.models).

One subpackage per kind, each with its Python and graph halves: `wordpiece`, `sentencepiece`,
`bpe`, `tokenizer_json`. What they share stays here: the base class (`base`), packing by the
pair layout each tokenizer is given (`packing.PairLayout`), offsets, alignment, encoding,
decoding, normalisation, the word splits; and what reads or writes every kind (`files`,
`saving`, `tokenizer_types`, `vocab_learning`).
"""

from kbert.tokenizers.bpe import BytePairTokenizer
from kbert.tokenizers.sentencepiece import SentencePieceTokenizer
from kbert.tokenizers.tokenizer_json import load_tokenizer_json, tokenizer_from_json
from kbert.tokenizers.wordpiece import SPECIAL_TOKENS, WordPieceTokenizer, read_vocabulary

__all__ = ["SPECIAL_TOKENS", "BytePairTokenizer", "SentencePieceTokenizer",
           "WordPieceTokenizer", "load_tokenizer_json", "read_vocabulary",
           "tokenizer_from_json"]
