"""SentencePiece (ALBERT, DeBERTa-v3): a serialized .model, ALBERT's preprocessing or none,
tensorflow-text's `SentencepieceTokenizer`. `tokenizer` is the Python half
(`SentencePieceTokenizer`), `graph` its graph twin of `tokenize_with_offsets`, `forms` the
characters' normalised forms that the graph half spells pieces by, and `charsmap` the model's
own normalisation table read from its bytes. Its pair layout is BERT's by default
(`packing.BERT`); XLM-R's is RoBERTa's (`pair_layout=packing.ROBERTA`)."""

from kbert.tokenizers.sentencepiece.tokenizer import (
    DEBERTA_SPECIAL_PIECES,
    SPECIAL_PIECES,
    SentencePieceTokenizer,
)

__all__ = ["DEBERTA_SPECIAL_PIECES", "SPECIAL_PIECES", "SentencePieceTokenizer"]
