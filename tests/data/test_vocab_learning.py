import subprocess
import sys
from pathlib import Path

import pytest

from kbert.tokenizers import SPECIAL_TOKENS, SentencePieceTokenizer, WordPieceTokenizer
from kbert.tokenizers import tokenizer_types
from kbert.tokenizers.sentence_piece_tokenizer import SPECIAL_PIECES
from kbert.tokenizers.vocab_learning import learn_sentence_piece_model, learn_vocabulary
from tests.helpers import as_dataset

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_learned_vocabulary(tokenizer):
    vocabulary = tokenizer.vocabulary
    assert vocabulary[:5] == list(SPECIAL_TOKENS.values())  # [PAD]=0 ... [MASK]=4
    assert 1500 < len(vocabulary) < 3000  # target 2000; the learner treats it as a target
    assert any(t.startswith("##") for t in vocabulary)
    ids = tokenizer.tokenize(["Return the value of the attribute."]).to_list()[0]
    assert tokenizer.unk_id not in ids


def test_bad_vocab_size():
    with pytest.raises(ValueError, match="vocab_size must be an integer > 5"):
        learn_vocabulary(as_dataset([[b"a b"]]), 3)


@pytest.mark.slow
def test_build_vocab_tool(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"the cat number {i} sat on the mat." for i in range(200)))
    out = tmp_path / "out" / "vocab.txt"
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_vocab.py"), f"--input={corpus}",
         "--vocab_size=100", f"--output={out}"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Wrote" in result.stdout
    tokenizer = WordPieceTokenizer(str(out))
    assert tokenizer.tokenize(["the cat sat"]).to_list()[0] == [
        tokenizer.token_to_id(w) for w in ("the", "cat", "sat")
    ]
    missing = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_vocab.py"), "--input=/no/such/*.txt",
         f"--output={out}"], capture_output=True, text=True, timeout=300,
    )
    assert missing.returncode != 0 and "No input file matches '/no/such/*.txt'" in missing.stderr


@pytest.mark.slow
def test_learned_sentence_piece_model(sentence_piece_tokenizer):
    """ALBERT's special pieces first, real multi-piece words, and no <unk> on English."""
    vocabulary = sentence_piece_tokenizer.vocabulary
    assert vocabulary[:5] == list(SPECIAL_PIECES.values())  # <pad>=0 ... [MASK]=4
    assert len(vocabulary) == 2000  # the corpus is large enough to reach the target
    assert sum(t.startswith("\u2581") for t in vocabulary) > 1000
    assert sum(not t.startswith("\u2581") for t in vocabulary[5:]) > 100  # continuations
    ids = sentence_piece_tokenizer.tokenize(["Return the value of the attribute."]).to_list()[0]
    assert sentence_piece_tokenizer.unk_id not in ids
    assert [sentence_piece_tokenizer.id_to_token(i) for i in ids][:2] == ["\u2581return",
                                                                         "\u2581the"]


def test_bad_sentence_piece_arguments():
    with pytest.raises(ValueError, match=r"vocab_size must be an integer > 5 \(the special "
                                         r"pieces \['<pad>'.*got 5"):
        learn_sentence_piece_model(as_dataset([[b"a b"]]), 5)
    with pytest.raises(ValueError, match="Unknown SentencePiece model_type 'char'. Allowed: "
                                         "unigram, bpe."):
        learn_sentence_piece_model(as_dataset([[b"a b"]]), 50, model_type="char")
    with pytest.raises(ValueError, match="The corpus gave no SentencePiece model"):
        learn_sentence_piece_model(as_dataset([[b" "]]), 50)


def test_tokenizer_types_by_name_and_file():
    assert tokenizer_types.type_of_file("run/spiece.model") == "sentencepiece"
    assert tokenizer_types.type_of_file("run/SPIECE.MODEL") == "sentencepiece"
    assert tokenizer_types.type_of_file("run/vocab.txt") == "wordpiece"
    assert tokenizer_types.type_of_file("run/vocab") == "wordpiece"
    with pytest.raises(ValueError, match="Unknown tokenizer type 'bpe'. Allowed: wordpiece, "
                                         "sentencepiece."):
        tokenizer_types.get("bpe")


@pytest.mark.slow
def test_build_vocab_tool_sentencepiece(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"the cat number {i} sat on the mat." for i in range(200)))
    out = tmp_path / "out" / "spiece.model"
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_vocab.py"), "--type=sentencepiece",
         f"--input={corpus}", "--learned_vocabulary_size=60", f"--output={out}"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Wrote a sentencepiece vocabulary of" in result.stdout
    tokenizer = SentencePieceTokenizer(str(out))
    assert tokenizer.vocabulary[:5] == list(SPECIAL_PIECES.values())
    ids = tokenizer.tokenize(["the cat sat"]).to_list()[0]
    assert tokenizer.unk_id not in ids
    assert "".join(tokenizer.id_to_token(i) for i in ids) == "\u2581the\u2581cat\u2581sat"
    bad = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_vocab.py"), "--type=bpe",
         f"--input={corpus}", f"--output={out}"], capture_output=True, text=True, timeout=300,
    )
    assert bad.returncode != 0
    assert "--type=bpe: value should be one of <wordpiece|sentencepiece>" in bad.stderr
