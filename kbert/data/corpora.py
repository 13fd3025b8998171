"""Corpora as tf.data datasets of documents: each element is a string vector of sentences.

Three sources:
- `text_files`: the original BERT format (one sentence per line, a blank line between
  documents), plain or gzip, by glob;
- `tfds_documents`: any tensorflow-datasets dataset with a text feature;
- `stdlib_docstrings`: the Python standard library's docstrings, read at run time (a document
  per module), so that pretraining runs offline on any machine.

Bad bytes are replaced (never a crash), control characters become spaces, and empty or
whitespace-only sentences and documents are dropped.
"""

import ast
import glob
import gzip
import os
import re
import sysconfig
import unicodedata

import tensorflow as tf

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


def clean_text(text):
    """Whitespace runs collapse to one space; control, format, private-use and unassigned
    characters are deleted, as BERT's tokenizer deletes them ("the\u200bstraße" is one
    word to it, so it must stay one word here)."""
    text = " ".join(text.split())
    # isprintable() (C speed) is True for almost every line once whitespace is collapsed.
    if text.isprintable():
        return text
    text = "".join(c for c in text if not unicodedata.category(c).startswith("C"))
    return " ".join(text.split())


def split_sentences(text):
    """A small rule-based splitter: breaks after . ! ? before a capital, digit or quote."""
    sentences = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = clean_text(paragraph)
        if paragraph:
            sentences.extend(s for s in _SENTENCE_END.split(paragraph) if s.strip())
    return sentences


def _documents_dataset(generator):
    return tf.data.Dataset.from_generator(
        generator, output_signature=tf.TensorSpec([None], tf.string)
    )


def expand_patterns(patterns):
    """Files matching each glob pattern, sorted. A pattern that matches nothing is an error."""
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [patterns]
    files = []
    for pattern in patterns:
        pattern = os.fspath(pattern)
        matches = sorted(f for f in glob.glob(pattern) if os.path.isfile(f))
        if not matches:
            raise FileNotFoundError(f"No input file matches {pattern!r}.")
        files.extend(matches)
    return files


def _read_lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        for raw in f:
            yield raw.decode("utf-8", errors="replace")


def text_files(patterns):
    """Documents from BERT-format text files (glob patterns; `.gz` files are decompressed).

    Raises FileNotFoundError naming the first pattern that matches no file, at once.
    """
    files = expand_patterns(patterns)

    def generate():
        for path in files:
            document = []
            for line in _read_lines(path):
                sentence = clean_text(line)
                if sentence:
                    document.append(sentence)
                elif document:
                    yield document
                    document = []
            if document:
                yield document

    return _documents_dataset(generate)


def tfds_documents(name, split="train", text_key="text", data_dir=None, download=True):
    """Documents from a tensorflow-datasets dataset, e.g. `wikipedia/20230601.en`.

    Each example's `text_key` feature is one document, split into paragraphs at blank
    lines and into sentences by `split_sentences`.
    """
    import tensorflow_datasets as tfds

    builder = tfds.builder(name, data_dir=data_dir)
    if text_key not in builder.info.features:
        raise ValueError(
            f"{name!r} has no feature {text_key!r}; its features: "
            f"{', '.join(builder.info.features)}."
        )
    if download:
        builder.download_and_prepare()
    examples = builder.as_dataset(split=split)

    def generate():
        for example in examples.as_numpy_iterator():
            text = example[text_key]
            text = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else str(text)
            sentences = split_sentences(text)
            if sentences:
                yield sentences

    return _documents_dataset(generate)


def _stdlib_files():
    root = sysconfig.get_paths()["stdlib"]
    skip = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in skip and not d.startswith("."))
        for name in sorted(names):
            if name.endswith(".py"):
                yield os.path.join(folder, name)


def _module_docstrings(path):
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read())
    except (SyntaxError, ValueError, OSError):
        return []
    nodes = [tree] + [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    return [doc for doc in (ast.get_docstring(n) for n in nodes) if doc]


def stdlib_docstrings(min_sentences=2):
    """Documents from the docstrings of this Python's standard library (no download).

    One document per module, sentences in source order. The modules are parsed, never
    imported. A few MB of English on a standard CPython install.
    """
    files = list(_stdlib_files())
    if not files:
        raise FileNotFoundError(
            f"No standard-library sources under {sysconfig.get_paths()['stdlib']!r}."
        )

    def generate():
        for path in files:
            sentences = []
            for doc in _module_docstrings(path):
                sentences.extend(split_sentences(doc))
            if len(sentences) >= min_sentences:
                yield sentences

    return _documents_dataset(generate)
