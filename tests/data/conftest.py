import pytest

from kbert.data import corpora
from kbert.tokenizers import SentencePieceTokenizer, WordPieceTokenizer
from kbert.tokenizers.vocab_learning import learn_sentence_piece_model
from tests.helpers import as_dataset


@pytest.fixture(scope="session")
def stdlib_documents():
    """The standard-library corpus as a Python list (parsed once per test session)."""
    return [list(doc) for doc in corpora.stdlib_docstrings().as_numpy_iterator()]


@pytest.fixture(scope="session")
def tokenizer(stdlib_vocab_file):
    """A WordPiece vocab learned from part of the stdlib corpus (it has real ## pieces): 2,000
    from its first 4,000 sentences, learned once per run (tests/conftest.py)."""
    return WordPieceTokenizer(stdlib_vocab_file)


@pytest.fixture(scope="session")
def sentence_piece_model(stdlib_documents):
    """A SentencePiece model (ALBERT's specials) learned from the same part of the corpus."""
    return learn_sentence_piece_model(as_dataset(stdlib_documents), 2000, max_sentences=4000)


@pytest.fixture
def sentence_piece_tokenizer(sentence_piece_model):
    """A tokenizer per test: tensorflow-text's SentencePiece model is a resource owned by an
    eager kernel, which `tf.random.set_seed` (the autouse seed of every test) drops."""
    return SentencePieceTokenizer(sentence_piece_model)


@pytest.fixture(scope="session")
def byte_pair_tokenizer(stdlib_documents, tmp_path_factory):
    """A byte-level BPE (RoBERTa's specials) learned from the same part of the corpus and
    loaded as the pretraining pipeline loads one (`tokenizer_types`: a space before every
    sentence, cased here)."""
    from kbert.tokenizers import tokenizer_types

    path = str(tmp_path_factory.mktemp("bpe") / "vocab.json")
    tokenizer_types.learn("bpe", as_dataset(stdlib_documents), path, 2000, lowercase=False,
                          max_sentences=4000)
    return tokenizer_types.load(path, lowercase=False)
