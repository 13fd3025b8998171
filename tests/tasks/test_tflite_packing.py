"""The TFLite packer (`kbert.tasks.graph.tflite_packing`, dense ops only) packs a pair by the
tokenizer's layout, as the SavedModel's packer (`tokenizers.packing.pack_to_longest`) does:
BERT's [CLS] A [SEP] B [SEP] and RoBERTa's <s> A </s></s> B </s> (all in segment 0)."""

import numpy as np
import pytest
import tensorflow as tf

from kbert.tasks.graph.tflite_packing import pack_pairs, pack_text
from kbert.tokenizers import WordPieceTokenizer
from kbert.tokenizers.packing import pack_to_longest

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d", "e"]


@pytest.mark.parametrize("layout", ["bert", "roberta"])
def test_pairs_follow_the_tokenizers_layout(layout):
    tokenizer = WordPieceTokenizer(WORDS, pair_layout=layout)
    first = tf.ragged.constant([[5, 6], [7], [8, 9, 5]], tf.int32)
    second = tf.ragged.constant([[9], [5, 6, 7], [6]], tf.int32)
    length = 12  # long enough for every pair: nothing is cut
    dense = {k: v.numpy() for k, v in pack_pairs(tokenizer, first, second, length).items()}
    ragged = {k: v.numpy() for k, v in pack_to_longest(tokenizer, first, second).items()}
    width = ragged["token_ids"].shape[1]
    for key in ("token_ids", "segment_ids", "padding_mask"):
        np.testing.assert_array_equal(dense[key][:, :width], ragged[key], err_msg=key)
        assert not dense["padding_mask"][:, width:].any()
    separators = 2 if layout == "roberta" else 1
    assert dense["token_ids"][0, :4 + separators].tolist() == [2, 5, 6] + [3] * separators + [9]
    single = pack_text(tokenizer, first, length)["token_ids"].numpy()
    assert single[1, :3].tolist() == [2, 7, 3]
