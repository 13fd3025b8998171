"""The documentation site as a reader sees it: `mkdocs build --strict` passes, and the built
pages, read in Chromium (Qt WebEngine, tests/docs/site_check.py) at a 1,400-pixel window, have
no table or code wider than the column, no flag broken across lines and no Markdown left in
the text; a page long enough to need it has sections (the on-page table of contents)."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.docs.blocks import ROOT

CHECK = ROOT / "tests" / "docs" / "site_check.py"


# mkdocs with TensorFlow, Keras and kbert unimportable: the site needs docs/requirements.txt
# alone (mkdocstrings reads the source).
MKDOCS = """
import sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "keras", "kbert", "tensorflow_text"):
            raise ImportError(f"the documentation build imported {name}")
sys.meta_path.insert(0, Blocked())
from mkdocs.__main__ import cli
cli()
"""


def build(folder, site):
    """`mkdocs build --strict` of the project at `folder` into `site`."""
    result = subprocess.run([sys.executable, "-c", MKDOCS, "build", "--strict", "--site-dir",
                             str(site)], cwd=folder, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return site


def findings(site, *pages):
    """{page: {kind: [what]}} of site_check.py, for the pages with something found."""
    pytest.importorskip("PySide6.QtWebEngineWidgets",
                        reason="PySide6-Addons (the test extra) brings Qt WebEngine")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "QTWEBENGINE_DISABLE_SANDBOX": "1",
           "QTWEBENGINE_CHROMIUM_FLAGS": "--disable-gpu"}
    result = subprocess.run([sys.executable, str(CHECK), str(site), *pages], capture_output=True,
                            text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    out = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert out, result.stderr[-3000:]
    return {row.pop("page"): row for row in out if len(row) > 1}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return build(ROOT, tmp_path_factory.mktemp("site") / "site")


def test_site_builds_strictly(site):
    """`mkdocs build --strict`: a broken link, a missing page or an API entry that does not
    resolve fails (the fixture's build, which imports neither TensorFlow nor kbert)."""
    assert (site / "api" / "models" / "index.html").exists()
    assert "class" in (site / "api" / "models" / "index.html").read_text()
    assert (site / "presets" / "index.html").exists()


def test_docs_requirements_are_setup_pys():
    """docs/requirements.txt (a docs-only environment) lists setup.py's DOCS, which the test
    extra takes."""
    import ast

    setup = ast.parse((ROOT / "setup.py").read_text())
    docs = next(node.value for node in setup.body if isinstance(node, ast.Assign)
                and getattr(node.targets[0], "id", None) == "DOCS")
    listed = [line.strip() for line in (ROOT / "docs" / "requirements.txt").read_text()
              .splitlines() if line.strip() and not line.startswith("#")]
    assert listed == ast.literal_eval(docs)
    test_extra = (ROOT / "setup.py").read_text().split('"test": [', 1)[1].split('"torch"', 1)[0]
    assert "*DOCS" in test_extra


def test_pages_render_within_the_column(site):
    assert findings(site) == {}


DEFECTS = """# Defects

## A table

| preset | release | a | b | c | d |
| --- | --- | --- | --- | --- | --- |
{row}

## Code

```python
{code}
```

## Text

A flag: run it with `--gradient_accumulation_steps` and then `--steps_per_execution`, then
`--max_predictions`, `--learned_vocabulary_size`, `--generator_hidden_fraction`, and again
`--gradient_accumulation_steps`, `--steps_per_execution`, `--max_predictions` and
`--learned_vocabulary_size`, `--generator_hidden_fraction` once more and `--model_dir`.

- **Pairs** of sentences.
  - `nsp`: a nested item at 2 spaces.

  A paragraph of the item after it, at 2 spaces.
- **Masking**: this item leaks into that paragraph as text.

The graph normalises as the tokenizer does (ALBERT's "``" -> '"'), and the pipeline does too
(`kbert.tokenizers.offsets`, chunks up to 64 characters).

!!! note "`Args`: a title with code"
    An admonition.
""".format(
    row=" | ".join(["| `bert_tiny`", "`https://storage.googleapis.com/bert_models/2020_02_20/"
                    "uncased_L-2_H-128_A-2.zip`", "`--objective`", "`--sequence_length`",
                    "`distil_bert_base`", "`tiny_bert_4l_312` |"]),
    code='model = kbert.load("bert_base", task="text-classification", num_labels=3, '
         'dropout=0.1)  # 103 characters')


def test_the_check_finds_each_defect(tmp_path):
    """A site with each defect the check is for, built with the project's theme and stylesheet
    but not its script (javascripts/code-words.js, which keeps a flag whole): every defect is
    found."""
    (tmp_path / "docs" / "stylesheets").mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "stylesheets" / "extra.css", tmp_path / "docs" / "stylesheets")
    (tmp_path / "docs" / "index.md").write_text(DEFECTS)
    config = (ROOT / "mkdocs.yml").read_text()
    config = config[:config.index("plugins:")].replace(
        "extra_javascript:\n  - javascripts/code-words.js\n", "")
    (tmp_path / "mkdocs.yml").write_text(config + "nav:\n  - index.md\n")
    found = findings(build(tmp_path, tmp_path / "site"), "index.html")["index.html"]
    wide = " ".join(found["wide"])
    assert any(w.startswith("table ") for w in found["wide"]), found
    assert any(w.startswith("code ") for w in found["wide"]), found
    assert "--sequence_length" in found["broken"], found
    markdown = " ".join(found["markdown"])
    assert "list marker" in markdown and "literal `" in markdown, found
    assert found["admonition_code"], found


def test_page_sources():
    """A page of more than 60 lines has at least two sections (`##`, `###`), so that Material
    shows its table of contents; a nested list is indented 4 spaces (Python-Markdown reads 2
    as items of the outer list, and a paragraph after them as text with "- " in it)."""
    flat, shallow = [], []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        if page.parent.name == "api":  # `:::` entries: mkdocstrings makes their sections
            continue
        text = re.sub(r"^\s*```.*?^\s*```", "", page.read_text(), flags=re.M | re.S)
        text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)  # front matter
        if len(text.splitlines()) > 60 and len(re.findall(r"^###? ", text, re.M)) < 2:
            flat.append(page.name)
        shallow += [f"{page.name}: {line}" for line in re.findall(r"^ {1,3}[-*] .*", text, re.M)]
    assert not flat, f"pages without sections: {flat}"
    assert not shallow, "nested list items at fewer than 4 spaces:\n" + "\n".join(shallow)
