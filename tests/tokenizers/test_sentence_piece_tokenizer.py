"""ALBERT's SentencePiece tokenizer against the ids of transformers' AlbertTokenizer, which
tests/fixtures/make_hf_tiny.py saved for the fixture's spiece.model."""

import gc
import io
from pathlib import Path

import keras
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


def test_seeding_tensorflow_does_not_break_a_tokenizer_made_before():
    """TensorFlow's seeding clears its kernel cache; tensorflow-text's SentencePiece resource
    belonged to a kernel and was deleted with it (the next call failed with "Resource ...
    does not exist"). Two tokenizers of different models keep their own ids."""
    tokenizer = SentencePieceTokenizer(ALBERT / "spiece.model")
    other = SentencePieceTokenizer(ALBERT.parent.parent / "tokenizer_parity" / "spiece.model")
    before = tokenizer.tokenize(["the word was"]).to_list()
    other_before = other.tokenize(["the word was"]).to_list()
    tf.random.set_seed(1)
    keras.utils.set_random_seed(2)
    assert tokenizer.tokenize(["the word was"]).to_list() == before
    assert other.tokenize(["the word was"]).to_list() == other_before
    assert before != other_before
    del other
    gc.collect()
    assert tokenizer.detokenize(tokenizer.tokenize(["the word was"])).numpy().tolist() == [
        b"the word was"]


def test_a_model_without_albert_specials_is_refused():
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(["the cat sat on the mat"] * 20), model_writer=model,
        vocab_size=12, model_type="char")
    with pytest.raises(ValueError, match=r"lacks the pieces \['<pad>', '\[CLS\]'"):
        SentencePieceTokenizer(model.getvalue())


def test_special_piece_literals_are_split_unless_asked():
    text = ["the [MASK] word<UNK>", "[mask] <pad> the"]
    split = SentencePieceTokenizer(ALBERT / "spiece.model")
    specials = {split.pad_id, split.cls_id, split.sep_id, split.mask_id}
    assert not specials & {i for row in split.tokenize(text).to_list() for i in row}
    kept = SentencePieceTokenizer(ALBERT / "spiece.model", split_special_tokens=False)
    # As transformers' AlbertTokenizer, which lower-cases before it looks: "<UNK>" is <unk>,
    # and "[mask]" is text.
    the, word = split.token_to_id("▁the"), split.token_to_id("▁word")
    got = kept.tokenize(text).to_list()
    assert got[0] == [the, kept.mask_id, word, kept.unk_id]
    assert got[1][-2:] == [kept.pad_id, the] and kept.mask_id not in got[1]


def albert_encode_pieces(model, text):
    """google-research/albert's tokenization.encode_pieces, on the Python package."""
    new_pieces = []
    for piece in model.encode(text, out_type=str):
        if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
            cur_pieces = model.encode(piece[:-1].replace("\u2581", ""), out_type=str)
            if piece[0] != "\u2581" and cur_pieces[0][0] == "\u2581":
                if len(cur_pieces[0]) == 1:
                    cur_pieces = cur_pieces[1:]
                else:
                    cur_pieces[0] = cur_pieces[0][1:]
            cur_pieces.append(piece[-1])
            new_pieces.extend(cur_pieces)
        else:
            new_pieces.append(piece)
    return [model.piece_to_id(piece) for piece in new_pieces]


def test_pieces_ending_in_a_digit_and_a_comma_are_split_as_albert_does():
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(["1,000 and 19,500 or 2,5 items, 99, 7"] * 20),
        model_writer=model, vocab_size=25, model_type="unigram", pad_id=0, unk_id=1,
        bos_id=-1, eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        user_defined_symbols=["9,", "\u25812,", "00,"], character_coverage=1.0)
    python = sentencepiece.SentencePieceProcessor(model_proto=model.getvalue())
    text = ["1,000 and 19,500 or 2,5 items, 99, 7", "900,000,000", "9,"]
    expected = [albert_encode_pieces(python, t) for t in text]
    assert expected != [python.encode(t) for t in text]  # the split does something here
    assert SentencePieceTokenizer(model.getvalue()).tokenize(text).to_list() == expected


def test_word_start_rule():
    """A piece that starts with "▁" starts a word; the pieces after it, up to the next such
    piece, are its continuation (whole-word masking goes by it)."""
    tokenizer = SentencePieceTokenizer(ALBERT / "spiece.model")
    text = "the word was written by the people who were there"
    pieces = [tokenizer.id_to_token(i) for i in tokenizer.tokenize(text).numpy()]
    starts = [tokenizer.starts_word(p) for p in pieces]
    assert sum(starts) == len(text.split())  # one start per word of the text
    assert not all(starts)  # and this tiny model spells some words in several pieces
    assert not any(tokenizer.is_placeholder(p) for p in tokenizer.vocabulary)
