import subprocess
import sys
from pathlib import Path

import pytest

from kbert.tokenizers import SPECIAL_TOKENS, WordPieceTokenizer
from kbert.tokenizers.vocab_learning import learn_vocabulary
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
