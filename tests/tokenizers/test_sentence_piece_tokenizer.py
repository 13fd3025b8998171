"""ALBERT's SentencePiece tokenizer against the ids of transformers' AlbertTokenizer, which
tests/fixtures/make_hf_tiny.py saved for the fixture's spiece.model."""

import io
from pathlib import Path

import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from kbert.tokenizers import SentencePieceTokenizer

ALBERT = Path(__file__).resolve().parent.parent / "fixtures" / "hf_tiny" / "albert"


def test_gives_the_ids_of_the_checkpoints_tokenizer():
    with np.load(ALBERT / "reference.npz") as reference:
        sentences = [s for s in reference["sentences"]]
        expected = [[i for i in row if i >= 0] for row in reference["sentence_ids"]]
    tokenizer = SentencePieceTokenizer(ALBERT / "spiece.model")
    # Accents, runs of whitespace, `` '' quotes and capitals are among them.
    assert tokenizer.tokenize(sentences).to_list() == expected
    assert tokenizer.tokenize(tf.constant(sentences[0])).numpy().tolist() == expected[0]
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id,
            tokenizer.mask_id) == (0, 1, 2, 3, 4)
    assert tokenizer.vocabulary_size == 80 and tokenizer.id_to_token(5) == "▁the"
    assert tokenizer.token_to_id("no such piece") == tokenizer.unk_id
    assert tokenizer.detokenize(tokenizer.tokenize(["the word  was"])).numpy().tolist() == [
        b"the word was"]
    with pytest.raises(ValueError, match="Token id 80 is out of range"):
        tokenizer.id_to_token(80)


def test_works_in_tf_data():
    tokenizer = SentencePieceTokenizer((ALBERT / "spiece.model").read_bytes())
    dataset = tf.data.Dataset.from_tensor_slices(["the word", "how will we"]).map(
        tokenizer.tokenize)
    assert [x.numpy().tolist() for x in dataset] == [tokenizer.tokenize(s).numpy().tolist()
                                                     for s in ("the word", "how will we")]


def test_a_model_without_albert_specials_is_refused():
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(["the cat sat on the mat"] * 20), model_writer=model,
        vocab_size=12, model_type="char")
    with pytest.raises(ValueError, match=r"lacks the pieces \['<pad>', '\[CLS\]'"):
        SentencePieceTokenizer(model.getvalue())
