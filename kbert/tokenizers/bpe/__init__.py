"""Byte-level BPE (GPT-2's, RoBERTa's): a vocab.json and merges.txt, GPT-2's split
(`kbert.tokenizers.byte_level`, shared with tokenizer.json's byte-level BPE) and the merges in
the graph. `tokenizer` is the Python half (`BytePairTokenizer` and the readers of its files),
`graph` its graph twin of `tokenize_with_offsets`, `merge` the merge table and loop that
tokenizer.json's BPE tokenizers share. Its pair layout is RoBERTa's (`packing.ROBERTA`)."""

from kbert.tokenizers.bpe.merge import MergeTable
from kbert.tokenizers.bpe.tokenizer import (
    SPECIAL_TOKENS,
    BytePairTokenizer,
    merge_pairs,
    read_merges,
    read_vocabulary,
)

__all__ = ["SPECIAL_TOKENS", "BytePairTokenizer", "MergeTable", "merge_pairs", "read_merges",
           "read_vocabulary"]
