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
import collections
import glob
import gzip
import hashlib
import json
import os
import re
import sys
import sysconfig
import unicodedata

import tensorflow as tf

from kbert import _cache, _extras
from kbert.data import sentences as _sentences


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


def split_paragraphs(text):
    """The sentences of each paragraph of `text` (paragraphs end at blank lines; one with no
    sentence is dropped), as `split_sentences` splits them: a list of lists."""
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = clean_text(paragraph)
        sentences = _sentences.split(paragraph)
        if sentences:
            paragraphs.append(sentences)
    return paragraphs


def split_sentences(text):
    """A small rule-based splitter (`kbert.data.sentences`: breaks after . ! ? or … before a
    capital, digit or quote, but not after an abbreviation or an initial), and at blank lines
    (paragraphs). Rules rather than a library's model, so that the summarizer's SavedModel
    splits in its graph exactly as here."""
    return [sentence for paragraph in split_paragraphs(text) for sentence in paragraph]


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
            yield from file_documents(path)

    return _documents_dataset(generate)


def file_documents(path):
    """The documents of one BERT-format text file, in order: lists of sentences (str)."""
    return line_documents(_read_lines(path))


def line_documents(lines):
    """Documents from the lines of a BERT-format file (str): a blank line ends one."""
    document = []
    for line in lines:
        sentence = clean_text(line)
        if sentence:
            document.append(sentence)
        elif document:
            yield document
            document = []
    if document:
        yield document


def tfds_documents(name, split="train", text_key="text", data_dir=None, download=True):
    """Documents from a tensorflow-datasets dataset, e.g. `wikipedia/20230601.en`.

    Each example's `text_key` feature is one document, split into paragraphs at blank
    lines and into sentences by `split_sentences`.
    """
    tfds = _extras.require("tensorflow_datasets", "datasets", f"The TFDS dataset {name}")
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
    return [doc for doc in map(ast.get_docstring, _documented_nodes(tree)) if doc]


_DOCUMENTED = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _documented_nodes(tree):
    """The module, classes and functions, in `ast.walk`'s breadth-first order. Only the
    statement lists are walked (bodies, branches, handlers, match cases): a docstring never
    sits in an expression, and skipping the expressions is several times faster."""
    queue = collections.deque([tree])
    while queue:
        node = queue.popleft()
        if isinstance(node, _DOCUMENTED):
            yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list) and value and isinstance(
                    value[0], (ast.stmt, ast.excepthandler, ast.match_case)):
                queue.extend(value)


def _module_sentences(path):
    sentences = []
    for doc in _module_docstrings(path):
        sentences.extend(split_sentences(doc))
    return sentences


_CACHE_FORMAT = 2


def _cached_stdlib_sentences(files):
    """Every module's sentences, from the cache or parsed now (and then cached)."""
    # The format's number goes into the name too: a change to the extraction must bump it.
    key = hashlib.sha256(f"{_CACHE_FORMAT}\0{sys.version}".encode())
    for path in files:
        stat = os.stat(path)
        key.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    name = f"stdlib_docstrings-{key.hexdigest()[:16]}.json"
    cache_file = _cache.cache_dir() / "corpora" / name
    try:
        modules = json.loads(cache_file.read_text(encoding="utf-8"))
        if isinstance(modules, list) and len(modules) == len(files):
            return modules
    except (OSError, ValueError):
        pass  # absent, unreadable or torn: parse again
    modules = [_module_sentences(path) for path in files]
    try:  # a read-only home only costs the next run the parse
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        partial = cache_file.with_name(f".{cache_file.name}.{os.getpid()}")
        partial.write_text(json.dumps(modules), encoding="utf-8")
        os.replace(partial, cache_file)  # atomic: concurrent runs never read half a file
    except OSError:
        pass
    return modules


def stdlib_docstrings(min_sentences=2, cache=True):
    """Documents from the docstrings of this Python's standard library (no download).

    One document per module, sentences in source order. The modules are parsed, never
    imported. A few MB of English on a standard CPython install.

    Parsing every module takes 10-20 s on a small CPU, so the sentences are kept in a JSON
    file under `$KBERT_CACHE_DIR` (default `~/.cache/kbert`), named by a hash of the Python
    version and every module's path, size and modification time: any change to the standard
    library parses it again. `cache=False` neither reads nor writes that file.
    """
    files = list(_stdlib_files())
    if not files:
        raise FileNotFoundError(
            f"No standard-library sources under {sysconfig.get_paths()['stdlib']!r}."
        )
    modules = _cached_stdlib_sentences(files) if cache else None

    def generate():
        for sentences in (modules if modules is not None else map(_module_sentences, files)):
            if len(sentences) >= min_sentences:
                yield sentences

    return _documents_dataset(generate)
