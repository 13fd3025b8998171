"""Hugging Face's tokenizer.json (ModernBERT's byte-level BPE, mmBERT's byte-fallback BPE):
`reading` checks the file part by part and gives a `TokenizerJson` and its tokenizer
(`load_tokenizer_json`, `tokenizer_from_json`); `tokenizer` is the Python half of those
tokenizers, `graph` their graph twin of `tokenize_with_offsets`, `normalizers` the normalisers
they read (with each normalised character's origin) and `added_tokens` the added tokens they
find before it. Its pair layout is the file's template's, unless given."""

from kbert.tokenizers.tokenizer_json.reading import (
    TokenizerJson,
    load_tokenizer_json,
    parse,
    tokenizer_from_json,
)
from kbert.tokenizers.tokenizer_json.tokenizer import (
    ByteFallbackTokenizer,
    ByteLevelJsonTokenizer,
    JsonTokenizer,
)

__all__ = ["ByteFallbackTokenizer", "ByteLevelJsonTokenizer", "JsonTokenizer", "TokenizerJson",
           "load_tokenizer_json", "parse", "tokenizer_from_json"]
