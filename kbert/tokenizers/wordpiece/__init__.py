"""WordPiece (BERT, DistilBERT, ELECTRA, MobileBERT): a vocab.txt, BERT's normalisation and
basic split, tensorflow-text's `FastBertTokenizer`. `tokenizer` is the Python half
(`WordPieceTokenizer`, the vocabulary and the normalisation), `graph` its graph twin of
`tokenize_with_offsets`; the words both split by are BERT's (`kbert.tokenizers.words`,
`kbert.tokenizers.words_graph`). Its pair layout is BERT's (`packing.BERT`)."""

from kbert.tokenizers.wordpiece.tokenizer import (
    SPECIAL_TOKENS,
    WordPieceTokenizer,
    normalize,
    read_vocabulary,
)

__all__ = ["SPECIAL_TOKENS", "WordPieceTokenizer", "normalize", "read_vocabulary"]
