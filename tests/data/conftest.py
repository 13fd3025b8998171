import pytest

from kbert.data import corpora
from kbert.tokenizers import WordPieceTokenizer
from kbert.tokenizers.vocab_learning import learn_vocabulary, write_vocabulary
from tests.helpers import as_dataset


@pytest.fixture(scope="session")
def stdlib_documents():
    """The standard-library corpus as a Python list (parsed once per test session)."""
    return [list(doc) for doc in corpora.stdlib_docstrings().as_numpy_iterator()]


@pytest.fixture(scope="session")
def tokenizer(stdlib_documents, tmp_path_factory):
    """A WordPiece vocab learned from part of the stdlib corpus (it has real ## pieces)."""
    vocabulary = learn_vocabulary(as_dataset(stdlib_documents), 2000, max_sentences=4000)
    path = str(tmp_path_factory.mktemp("vocab") / "vocab.txt")
    write_vocabulary(vocabulary, path)
    return WordPieceTokenizer(path)
