import ast
import gzip
import json

import pytest
import tensorflow_datasets as tfds

from kbert.data import corpora, inputs


def read(dataset):
    return [[s.decode() for s in doc] for doc in dataset.as_numpy_iterator()]


def test_bert_format_text_files(tmp_path):
    (tmp_path / "a.txt").write_text("First doc one.\nFirst doc two.\n\n   \n\nSecond doc.\n")
    with gzip.open(tmp_path / "b.txt.gz", "wt") as f:
        f.write("Zipped doc.\nStill zipped.\n")
    (tmp_path / "empty.txt").write_text("")
    docs = read(corpora.text_files(str(tmp_path / "*")))
    assert docs == [
        ["First doc one.", "First doc two."],
        ["Second doc."],
        ["Zipped doc.", "Still zipped."],
    ]


def test_bad_bytes_and_control_characters(tmp_path):
    (tmp_path / "bad.txt").write_bytes(b"ok \xff\xfe bytes\x00 and\x07 bells\r\n\x0b\n\ttabs\tinside\n")
    docs = read(corpora.text_files(str(tmp_path / "bad.txt")))
    assert docs == [["ok \ufffd\ufffd bytes and bells"], ["tabs inside"]]
    # Format characters are deleted, as BERT's tokenizer deletes them: one word stays one.
    assert corpora.clean_text("the\u200bstra\u00adße \ufeffand\ue000 more") == "thestraße and more"


def test_missing_inputs_fail_before_any_work(tmp_path):
    with pytest.raises(FileNotFoundError, match="No input file matches .*nothing-here"):
        corpora.text_files(str(tmp_path / "nothing-here*.txt"))
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        inputs.documents(f"{tmp_path}/missing.txt")
    with pytest.raises(ValueError, match="Empty input"):
        inputs.documents("")


def test_split_sentences():
    text = "One sentence. Another one! Is it 3? Yes.\n\nNew paragraph e.g. here."
    assert corpora.split_sentences(text) == [
        "One sentence.", "Another one!", "Is it 3?", "Yes.", "New paragraph e.g. here."
    ]
    # Paragraphs: at blank lines (whitespace between the line breaks); none left empty.
    assert corpora.split_paragraphs(text + "\n \t\n\n\u200b\n\nLast.") == [
        ["One sentence.", "Another one!", "Is it 3?", "Yes."], ["New paragraph e.g. here."],
        ["Last."]]


# Pride and Prejudice's opening (public domain; its paragraphs run together), then prose
# dense in what ends no sentence: titles, initials, number and Latin abbreviations, acronyms,
# decimals; and what does: "etc.", an ellipsis, a closing quote, an acronym before "In".
PROSE = (
    "It is a truth universally acknowledged, that a single man in possession of a good "
    "fortune, must be in want of a wife. However little known the feelings or views of such a "
    "man may be on his first entering a neighbourhood, this truth is so well fixed in the "
    "minds of the surrounding families, that he is considered the rightful property of some "
    "one or other of their daughters. “My dear Mr. Bennet,” said his lady to him one day, "
    "“have you heard that Netherfield Park is let at last?” Mr. Bennet replied that he had "
    "not. “But it is,” returned she; “for Mrs. Long has just been here, and she told me all "
    "about it.” Mr. Bennet made no answer.\n\n"
    "Dr. Smith, the chair, thanked everyone. Prof. J. R. R. Tolkien's letters, e.g. the one "
    "to his publisher, fill Vol. 3 of the series, pp. 12–15 (see Fig. 2). The U.S. Army paid "
    "$3.5 million for them in 1998, vs. $2.75 million offered by Oxford Univ. Press, i.e. "
    "more. They arrived at 9 a.m. The boxes held maps, drafts, notes, etc. Some were "
    "damaged... Most survived. Mr. and Mrs. Jones of Baker St. in London, who found them, "
    "gave them to the U.S. In return they asked for nothing.")
PROSE_SENTENCES = [
    "It is a truth universally acknowledged, that a single man in possession of a good "
    "fortune, must be in want of a wife.",
    "However little known the feelings or views of such a man may be on his first entering a "
    "neighbourhood, this truth is so well fixed in the minds of the surrounding families, "
    "that he is considered the rightful property of some one or other of their daughters.",
    "“My dear Mr. Bennet,” said his lady to him one day, “have you heard that Netherfield "
    "Park is let at last?”",
    "Mr. Bennet replied that he had not.",
    "“But it is,” returned she; “for Mrs. Long has just been here, and she told me all about "
    "it.”",
    "Mr. Bennet made no answer.",
    "Dr. Smith, the chair, thanked everyone.",
    "Prof. J. R. R. Tolkien's letters, e.g. the one to his publisher, fill Vol. 3 of the "
    "series, pp. 12–15 (see Fig. 2).",
    "The U.S. Army paid $3.5 million for them in 1998, vs. $2.75 million offered by Oxford "
    "Univ. Press, i.e. more.",
    "They arrived at 9 a.m.",
    "The boxes held maps, drafts, notes, etc.",
    "Some were damaged...",
    "Most survived.",
    "Mr. and Mrs. Jones of Baker St. in London, who found them, gave them to the U.S.",
    "In return they asked for nothing.",
]


def test_split_sentences_knows_abbreviations_initials_and_decimals():
    assert corpora.split_sentences("Dr. Smith, the chair, thanked everyone.") == [
        "Dr. Smith, the chair, thanked everyone."]
    assert corpora.split_sentences(PROSE) == PROSE_SENTENCES
    assert [len(p) for p in corpora.split_paragraphs(PROSE)] == [6, 9]
    # An abbreviation that can end a sentence ends one before a sentence's opener alone; a
    # number's ends none before a number; "etc." ends one before any capital.
    assert corpora.split_sentences(
        "He took vitamin C. It helped. George W. Bush spoke. Robert Downey Jr. In 2008 he "
        "starred. No. 10 is here. No. That is wrong. Fruit, etc. are sold. A. A. Milne wrote."
    ) == ["He took vitamin C.", "It helped.", "George W. Bush spoke.", "Robert Downey Jr.",
          "In 2008 he starred.", "No. 10 is here.", "No.", "That is wrong.",
          "Fruit, etc. are sold.", "A. A. Milne wrote."]


def test_tfds_documents():
    with tfds.testing.mock_data(num_examples=7):
        docs = read(inputs.documents("tfds:imdb_reviews:train"))
    assert len(docs) == 7 and all(doc and all(s.strip() for s in doc) for doc in docs)
    with tfds.testing.mock_data(num_examples=2):
        with pytest.raises(ValueError, match="no feature 'body'"):
            corpora.tfds_documents("imdb_reviews", text_key="body")


@pytest.mark.slow
def test_stdlib_docstrings(stdlib_documents):
    assert len(stdlib_documents) > 200
    sentences = sum(len(doc) for doc in stdlib_documents)
    words = sum(len(s.split()) for doc in stdlib_documents for s in doc)
    assert sentences > 10_000 and words > 100_000
    assert all(len(doc) >= 2 and all(s.strip() for s in doc) for doc in stdlib_documents)


def test_stdlib_docstrings_cache(tmp_path, monkeypatch):
    """The cached sentences are the parsed ones; a torn cache file is parsed again and
    rewritten; another set of modules gets another file."""
    files = list(corpora._stdlib_files())
    some = [f for f in files if f.endswith(("/textwrap.py", "/shlex.py", "/bisect.py"))]
    assert len(some) == 3
    monkeypatch.setenv("KBERT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(corpora, "_stdlib_files", lambda: iter(some))

    parsed = read(corpora.stdlib_docstrings(cache=False))
    assert not list(tmp_path.rglob("*.json"))
    assert read(corpora.stdlib_docstrings()) == parsed
    [cache_file] = tmp_path.rglob("*.json")
    assert json.loads(cache_file.read_text()) == [corpora._module_sentences(f) for f in some]
    cache_file.write_text(cache_file.read_text()[:100])  # torn
    assert read(corpora.stdlib_docstrings()) == parsed
    assert json.loads(cache_file.read_text()) == [corpora._module_sentences(f) for f in some]

    monkeypatch.setattr(corpora, "_stdlib_files", lambda: iter(some[:2]))
    assert read(corpora.stdlib_docstrings()) == parsed[:2]
    assert len(list(tmp_path.rglob("*.json"))) == 2


def test_docstrings_in_walk_order_without_walking_expressions(tmp_path):
    source = '''"""Module."""
import x
if x:
    def f():
        """F."""
        def inner():
            """Inner."""
try:
    pass
except ImportError:
    class C:
        """C."""
        async def m(self):
            """M."""
else:
    def g():
        """G."""
match x:
    case 1:
        def h():
            """H."""
'''
    path = tmp_path / "m.py"
    path.write_text(source)
    tree = ast.parse(source)
    walked = [ast.get_docstring(n) for n in [tree] + [
        n for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]]
    assert corpora._module_docstrings(str(path)) == walked
    assert sorted(walked) == ["C.", "F.", "G.", "H.", "Inner.", "M.", "Module."]
