"""Every example of the documentation runs (issue 30): the Python and shell blocks of
README.md and docs/*.md, and the fenced examples of the docstrings.

How each block runs is in tests/docs/blocks.py (markers), standins.py (what stands in for
downloads) and commands.py (shell commands); docs/contributing.md says it for authors.
"""

import contextlib
import importlib
import os
from pathlib import Path

import pytest

from tests.docs import blocks as docs_blocks
from tests.docs import commands, standins

ROOT = docs_blocks.ROOT
PAGES = [path.relative_to(ROOT).as_posix() for path in docs_blocks.markdown_files()]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return standins.make_folder(tmp_path_factory.mktemp("standins"))


@contextlib.contextmanager
def inside(folder):
    before = os.getcwd()
    os.chdir(folder)
    try:
        with standins.presets_as_tiny_models():
            yield
    finally:
        os.chdir(before)


def run_python(block, namespace):
    try:
        exec(compile(block.code, block.where, "exec"), namespace)
    except Exception as error:
        raise AssertionError(f"{block.where} failed: {type(error).__name__}: {error}") from error


def code_blocks(page):
    return [block for block, _ in docs_blocks.markdown_blocks(ROOT / page) if block]


def runs_here(block):
    return block.marker("skip") is None and block.marker("example") is None


# Pages whose examples train or export (2-15 s each on 2 shared cores, the first to train
# paying TensorFlow's warm-up); untrusted.md loads the export serving.md makes.
SLOW_PAGES = {"README.md", "docs/fine-tuning.md", "docs/pretraining.md",
              "docs/pretraining-data.md", "docs/serving.md", "docs/untrusted.md",
              "docs/code-lines.md", "docs/guides/token-classification.md",
              "docs/guides/question-answering.md",
              "docs/guides/sentence-embeddings.md", "docs/guides/fill-mask.md"}


@pytest.mark.parametrize("page", [pytest.param(page, marks=[pytest.mark.slow] * (page in SLOW_PAGES))
                                  for page in PAGES])
def test_page_examples_run(page, folder):
    """The page's Python blocks in order in one namespace, its shell blocks checked."""
    namespace = {"__name__": "__docs__"}
    with inside(folder):
        for block in filter(runs_here, code_blocks(page)):
            if block.language == "python":
                run_python(block, namespace)
            else:
                commands.check_block(block.code, folder)


def test_docstring_examples_run(folder):
    """Fenced ```python examples of the docstrings, each in its module's namespace."""
    blocks, unfenced = docs_blocks.docstring_blocks()
    assert not unfenced, f"unfenced docstring examples (fence them in ```python): {unfenced}"
    assert blocks, "no docstring examples found"
    with inside(folder):
        for block in blocks:
            namespace = dict(vars(importlib.import_module(block.page)))
            namespace.setdefault("kbert", importlib.import_module("kbert"))
            namespace.setdefault("keras", importlib.import_module("keras"))
            run_python(block, namespace)


def test_blocks_not_run_here_are_marked_and_listed():
    """Prints the blocks this file does not run: skipped (with the reason) or run by another
    test (which must exist and read the page). Every other code block ran above."""
    not_run, other = [], []
    for page in PAGES:
        for block, language in docs_blocks.markdown_blocks(ROOT / page):
            if block is None:
                other.append(f"{page} ```{language}")
                continue
            reason = block.marker("skip")
            if reason is not None:
                assert reason, f"{block.where}: a skip marker needs its reason"
                not_run.append(f"{block.where}: skipped: {reason}")
            elif (runner := block.marker("example")) is not None:
                path = runner.removeprefix("run by").split()[0].split("::")[0]
                assert (ROOT / path).is_file(), f"{block.where}: no test {path}"
                assert Path(block.page).name in (ROOT / path).read_text(), (
                    f"{block.where}: {path} does not read {block.page}")
                not_run.append(f"{block.where}: {runner}")
    print(f"\n{len(not_run)} code blocks not run by this file:")
    print("\n".join(not_run))
    print(f"(not code, not run: {len(other)} blocks of {sorted(set(o.split()[1] for o in other))})")
    assert not any(o.endswith("```") for o in other), "a fence without a language"
    skipped = [line for line in not_run if ": skipped: " in line]
    assert len(skipped) <= 8, "keep skips few: run the block on a stand-in instead"


def test_api_reference_has_every_public_name():
    """Every name in a public package's `__all__` has its `:::` entry in docs/api/."""
    import re

    entries = set()
    for path in (ROOT / "docs" / "api").glob("*.md"):
        entries |= set(re.findall(r"^::: (\S+)", path.read_text(), re.M))
    missing = []
    for package in API_PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            value = getattr(module, name)
            home = getattr(value, "__name__", None) if isinstance(value, type(os)) else None
            defined = f"{getattr(value, '__module__', package)}.{name}"
            if not ({f"{package}.{name}", defined, home} & entries):
                missing.append(f"{package}.{name}")
    assert not missing, f"not in docs/api/*.md: {missing}"


API_PACKAGES = ["kbert.layers", "kbert.models", "kbert.tokenizers", "kbert.data", "kbert.tasks",
                "kbert.training", "kbert.loading", "kbert.presets", "kbert.convert",
                "kbert.serving", "kbert.untrusted", "kbert.pipelines", "kbert.batch", "kbert.analysis"]
