"""The families and tasks the documentation lists are the registries' (kbert.models.FAMILIES,
kbert.pipelines.TASKS, the fine-tuning tasks), and no page names an issue of this project or
a path of one machine."""

import re

import pytest

from tests.docs.blocks import ROOT
from tests.docs.presets_page import FAMILY_NAMES

# Pages that list the families, each of which must name all of them.
FAMILY_PAGES = ["README.md", "docs/index.md", "docs/getting-started.md", "docs/models.md",
                "docs/fine-tuning.md", "docs/checkpoints.md", "docs/pretraining.md",
                "docs/presets.md"]
NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
           "nine": 9, "ten": 10}


def pages():
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def names(text, name):
    return re.search(rf"(?<![A-Za-z]){re.escape(name)}(?![A-Za-z])", text) is not None


def test_family_names_are_the_registry():
    import kbert.models

    assert list(FAMILY_NAMES) == list(kbert.models.FAMILIES)


@pytest.mark.parametrize("page", FAMILY_PAGES)
def test_family_lists_name_every_family(page):
    text = (ROOT / page).read_text()
    missing = [name for name in FAMILY_NAMES.values() if not names(text, name)]
    assert not missing, f"{page} lists the families without {missing}"


def test_family_counts_are_the_registry():
    """'the seven families' where there are eight: every 'N families' of the docs."""
    import kbert.models

    wrong = []
    for page in pages():
        for word in re.findall(r"\b(\w+)\s+(?:model\s+)?families\b", page.read_text()):
            count = int(word) if word.isdigit() else NUMBERS.get(word.lower())
            if count is not None and count != len(kbert.models.FAMILIES):
                wrong.append(f"{page.relative_to(ROOT)}: {word} families")
    assert not wrong, wrong


def test_backbone_docstring_names_every_family():
    import kbert.models

    doc = kbert.models.Backbone.__doc__
    missing = [family.backbone.__name__ for family in kbert.models.FAMILIES.values()
               if family.backbone.__name__ not in doc]
    assert not missing, missing


def test_task_lists_are_the_registries():
    import kbert.pipelines
    from kbert.training import finetuning_config

    for page in ["docs/pipelines.md", "docs/serving.md"]:
        text = (ROOT / page).read_text()
        missing = [task for task in kbert.pipelines.TASKS if task not in text]
        assert not missing, f"{page} lists the pipelines without {missing}"
    text = (ROOT / "docs" / "fine-tuning.md").read_text()
    listed = re.search(r"`--task`\s*\(([^)]*)", text).group(1)
    assert re.findall(r"`(\w+)`", listed) == list(finetuning_config.TASKS), listed


ISSUE = re.compile(r"\bissues? #?\d+|(?<![\w/.-])#\d+\b", re.I)
# Absolute folders of one machine (a temporary folder, a home), or a Windows drive.
MACHINE_ROOTS = ("tmp", "work", "home", "root", "Users")
MACHINE_PATH = re.compile(r"(?<![\w.])(" + "|".join(f"/{root}/" for root in MACHINE_ROOTS)
                          + r"|[A-Z]:\\)")


def test_no_issue_numbers_or_machine_paths():
    found = []
    for page in pages():
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for pattern in (ISSUE, MACHINE_PATH):
                if pattern.search(line):
                    found.append(f"{page.relative_to(ROOT)}:{number}: {line.strip()[:90]}")
    assert not found, "\n".join(found)


def _message_literals():
    """{module: its string literals, implicit concatenations joined, an f-string's values as
    NUL, NUL-separated}: the messages each module of kbert can say."""
    import ast

    out = {}
    for path in (ROOT / "kbert").rglob("*.py"):
        literals = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                literals.append(node.value)
            elif isinstance(node, ast.JoinedStr):
                literals.append("".join(part.value if isinstance(part, ast.Constant) else "\0"
                                        for part in node.values))
        out[path.relative_to(ROOT).as_posix()] = "\0".join(literals)
    return out


def _covered(piece, source):
    """Whether `piece` reads as kbert's own words: it splits into runs of at least 6
    characters, each in one literal of `source` (NUL-separated), with quotes, brackets and
    punctuation between them (a value's repr, or two literals joined)."""
    i = 0
    while i < len(piece):
        if piece[i] in " '\"[](),.:;=":
            i += 1
            continue
        j = len(piece)
        while j > i and piece[i:j] not in source:
            j -= 1
        if j - i < min(6, len(piece) - i):
            return False
        i = j
    return True


def test_troubleshooting_quotes_the_code():
    """Each error on docs/troubleshooting.md is one kbert says: every piece of its message
    between `...` (your call's values) is made of the strings of one kbert module (a
    message's pieces may come from two: a refusal and the hint added to it)."""
    page = (ROOT / "docs" / "troubleshooting.md").read_text()
    messages = re.findall(r"^```text\n(.*?)^```", page, re.M | re.S)
    assert len(messages) >= 10, messages
    modules = _message_literals()
    missing = []
    for message in messages:
        for line in message.strip().splitlines():
            line = re.sub(r"^[A-Za-z]*Error: ", "", line)
            missing += [piece for piece in line.split("...")
                        if not any(_covered(piece, source) for source in modules.values())]
    assert not missing, missing


def test_the_home_pages_family_table_has_a_column_per_family():
    text = (ROOT / "docs" / "index.md").read_text()
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| | BERT |"))
    table = lines[start:lines.index("", start)]
    assert [cell.strip() for cell in table[0].strip("|").split("|")][1:] == list(
        FAMILY_NAMES.values())
    short = [row[:40] for row in table if row.count(" | ") != len(FAMILY_NAMES)]
    assert not short, f"rows without a cell per family: {short}"


def test_the_notebooks_page_lists_every_notebook_with_the_extras_it_installs():
    """docs/notebooks.md has a row for each notebook of colab/, naming the extras its install
    cell asks for."""
    text = (ROOT / "docs" / "notebooks.md").read_text()
    notebooks = sorted((ROOT / "colab").glob("*.ipynb"))
    assert notebooks
    for notebook in notebooks:
        row = next((line for line in text.splitlines()
                    if line.startswith(f"| `colab/{notebook.name}` |")), None)
        assert row, f"docs/notebooks.md has no row for colab/{notebook.name}"
        extras = re.search(r'EXTRAS = \\"([a-z,-]*)\\"', notebook.read_text()).group(1)
        listed = re.findall(r"`([a-z-]+)`", row.rsplit("|", 2)[1])
        assert listed == extras.split(","), (notebook.name, listed, extras)
