from pathlib import Path

import pytest

from kbert.tokenizers import SPECIAL_TOKENS, SentencePieceTokenizer, WordPieceTokenizer
from kbert.tokenizers import tokenizer_types
from kbert.tokenizers.sentencepiece.tokenizer import SPECIAL_PIECES
from kbert.tokenizers.vocab_learning import learn_sentence_piece_model, learn_vocabulary
from tests.helpers import as_dataset
from tests.tools.one_process import run_commands

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "build_vocab.py"


@pytest.fixture(scope="module")
def tool_runs(tmp_path_factory):
    """The commands of the tool tests below, all in ONE process (tests/tools/one_process.py:
    each as `python tools/build_vocab.py FLAGS` runs it, TensorFlow imported once, not ~5 s
    per command): {kind: (its folder, [CompletedProcess of each of its commands])}."""
    from tests.tokenizers.test_byte_pair_tokenizer import hostile_strings

    base = tmp_path_factory.mktemp("build_vocab")
    wp, sp, bpe = (base / kind for kind in ("wordpiece", "sentencepiece", "bpe"))
    for folder in (wp, sp, bpe):
        folder.mkdir()
    for folder in (wp, sp):
        (folder / "corpus.txt").write_text(
            "\n".join(f"the cat number {i} sat on the mat." for i in range(200)))
    (bpe / "corpus.txt").write_text(
        "\n".join(f"The cat number {i} sat on the Mat, again." for i in range(200))
        + "\n\n" + "\n".join(s for s in hostile_strings(300, seed=2)
                              if isinstance(s, str) and "\n" not in s))
    bpe_flags = ["--type=bpe", f"--input={bpe / 'corpus.txt'}",
                 "--learned_vocabulary_size=500"]  # cased by default
    commands = {
        "wordpiece": [[f"--input={wp / 'corpus.txt'}", "--vocab_size=100",
                       f"--output={wp / 'out' / 'vocab.txt'}"],
                      ["--input=/no/such/*.txt", f"--output={wp / 'out' / 'vocab.txt'}"]],
        "sentencepiece": [["--type=sentencepiece", f"--input={sp / 'corpus.txt'}",
                           "--learned_vocabulary_size=60",
                           f"--output={sp / 'out' / 'spiece.model'}"],
                          ["--type=unigram", f"--input={sp / 'corpus.txt'}",
                           f"--output={sp / 'out' / 'spiece.model'}"]],
        # The bad --output first: a usage error before any learning.
        "bpe": [bpe_flags + [f"--output={bpe / 'bpe.txt'}"],
                bpe_flags + [f"--output={bpe / 'out' / 'vocab.json'}"]],
    }
    done = iter(run_commands(TOOL, [c for cs in commands.values() for c in cs], timeout=600))
    return {kind: (base / kind, [next(done) for _ in cs]) for kind, cs in commands.items()}


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
def test_build_vocab_tool(tool_runs):
    tmp_path, (result, missing) = tool_runs["wordpiece"]
    out = tmp_path / "out" / "vocab.txt"
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Wrote" in result.stdout
    tokenizer = WordPieceTokenizer(str(out))
    assert tokenizer.tokenize(["the cat sat"]).to_list()[0] == [
        tokenizer.token_to_id(w) for w in ("the", "cat", "sat")
    ]
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
    assert tokenizer_types.type_of_file("run/vocab.json") == "bpe"
    assert tokenizer_types.files("run/vocab.json") == ["run/vocab.json", "run/merges.txt"]
    assert tokenizer_types.files("run/vocab.txt") == ["run/vocab.txt"]
    with pytest.raises(ValueError, match="Unknown tokenizer type 'unigram'. Allowed: wordpiece, "
                                         "sentencepiece, bpe."):
        tokenizer_types.get("unigram")


def test_byte_pair_files_are_named_and_found(tmp_path):
    """A byte-level BPE is a .json vocabulary with merges.txt beside it: another name fails
    before any learning, and a vocab.json without its merges names the missing file."""
    import json

    documents = as_dataset([[b"the cat sat on the mat"] * 20])
    with pytest.raises(ValueError, match="the path must end in .json, got '.*vocab.txt'"):
        tokenizer_types.learn("bpe", documents, str(tmp_path / "vocab.txt"), 300)
    assert not list(tmp_path.iterdir())
    lonely = tmp_path / "lonely" / "vocab.json"
    lonely.parent.mkdir()
    lonely.write_text(json.dumps({"<s>": 0}))
    with pytest.raises(ValueError, match="without its merges: '.*lonely/merges.txt' does not"):
        tokenizer_types.load(str(lonely))


def test_the_byte_pair_kind_learns_what_it_loads(tmp_path):
    """tokenizer_types' bpe kind: learned and loaded with a space before every text, cased or
    lower-cased as asked; the loaded tokenizer gives the `tokenizers` package's ids."""
    from tokenizers import ByteLevelBPETokenizer

    sentences = [b"The Cat number %d sat on the mat, again." % i for i in range(200)]
    documents = as_dataset([sentences[i:i + 10] for i in range(0, 200, 10)])
    texts = ["The Cat sat.", "on THE mat, again", "", "Zebras 42"]
    for lowercase in (False, True):
        path = tmp_path / str(lowercase) / "vocab.json"
        vocabulary, merges = tokenizer_types.learn("bpe", documents, str(path), 300,
                                                   lowercase=lowercase)
        assert vocabulary[:5] == ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
        tokenizer = tokenizer_types.load(str(path), lowercase=lowercase)
        assert tokenizer.merges == merges and tokenizer.add_prefix_space
        reference = ByteLevelBPETokenizer(str(path), str(path.parent / "merges.txt"),
                                          add_prefix_space=True, lowercase=lowercase)
        assert tokenizer.tokenize(texts).to_list() == [e.ids for e in
                                                       reference.encode_batch(texts)]
        learned = set(vocabulary)
        assert ("\u0120cat" in learned) == lowercase and ("\u0120Cat" in learned) != lowercase


@pytest.mark.slow
def test_build_vocab_tool_sentencepiece(tool_runs):
    tmp_path, (result, bad) = tool_runs["sentencepiece"]
    out = tmp_path / "out" / "spiece.model"
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Wrote a sentencepiece vocabulary of" in result.stdout
    tokenizer = SentencePieceTokenizer(str(out))
    assert tokenizer.vocabulary[:5] == list(SPECIAL_PIECES.values())
    ids = tokenizer.tokenize(["the cat sat"]).to_list()[0]
    assert tokenizer.unk_id not in ids
    assert "".join(tokenizer.id_to_token(i) for i in ids) == "\u2581the\u2581cat\u2581sat"
    assert bad.returncode != 0
    assert "--type=unigram: value should be one of <wordpiece|sentencepiece|bpe>" in bad.stderr


@pytest.mark.slow
def test_build_vocab_tool_bpe(tool_runs):
    """build_vocab.py --type=bpe writes vocab.json and merges.txt beside it; BytePairTokenizer
    loads them and gives the `tokenizers` package's ids; an --output not ending in .json is
    a usage error before any learning."""
    from tokenizers import ByteLevelBPETokenizer

    from kbert.tokenizers import BytePairTokenizer
    from tests.tokenizers.test_byte_pair_tokenizer import hostile_strings

    tmp_path, (bad, result) = tool_runs["bpe"]
    out = tmp_path / "out" / "vocab.json"
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "the path must end in .json, got " in bad.stderr
    assert result.returncode == 0, result.stderr[-2000:]
    merges = out.parent / "merges.txt"
    assert (f"Wrote a bpe vocabulary of 500 tokens to {out} and {merges}") in result.stdout
    texts = ["The cat sat on the Mat.", "the CAT"] + [
        s for s in hostile_strings(200, seed=4) if isinstance(s, str)]
    for add_prefix_space in (False, True):
        reference = ByteLevelBPETokenizer(str(out), str(merges), add_prefix_space=add_prefix_space)
        tokenizer = BytePairTokenizer(str(out), str(merges), add_prefix_space=add_prefix_space)
        assert tokenizer.tokenize(texts).to_list() == [e.ids for e in
                                                       reference.encode_batch(texts)]
    ids = tokenizer.tokenize(["The cat sat on the Mat"]).to_list()[0]
    assert [tokenizer.id_to_token(i) for i in ids] == [
        "\u0120The", "\u0120cat", "\u0120sat", "\u0120on", "\u0120the", "\u0120Mat"]
