"""The code blocks of the documentation: every ```python and ```bash (```shell, ```sh)
block of README.md and docs/*.md, and every fenced ```python block of a public docstring,
with the HTML-comment markers written on the lines right before it.

Markers (docs/contributing.md lists them):

- `<!-- skip: REASON -->`: not run; the tests print each with its reason.
- `<!-- example: run by tests/PATH.py -->`: run by that (slow) test, which reads this page.
- none: run. Python blocks run in order in one namespace per page, in the stand-in folder
  (tests/docs/standins.py); bash blocks' `python tools/X.py` commands are parsed and checked
  as the program would (tests/docs/commands.py) but not run: they are long jobs.
"""

import dataclasses
import importlib
import inspect
import pkgutil
import re
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = {"python": "python", "bash": "bash", "shell": "bash", "sh": "bash"}
MARKER = re.compile(r"^<!--\s*(.*?)\s*-->$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")


@dataclasses.dataclass
class Block:
    where: str       # "docs/serving.md:42" or "kbert.models.bert.bert_backbone.BertBackbone"
    page: str        # the file (or module) whose blocks share a namespace
    language: str    # "python" or "bash"
    code: str
    markers: list

    def marker(self, kind):
        """The text after `kind:` of this block's marker of that kind, or None."""
        for marker in self.markers:
            name, _, value = marker.partition(":")
            if name.strip() == kind:
                return value.strip()
        return None


def markdown_files():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("**/*.md"))


def markdown_blocks(path):
    """Every fenced block of a Markdown file with a language, code ones and others alike:
    (Block or None for a non-code block, the fence's language)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    relative = Path(path).relative_to(ROOT).as_posix()
    found, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, language = match.groups()
        start, i = i, i + 1
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        i += 1
        markers, j = [], start - 1
        while j >= 0 and MARKER.match(lines[j].strip()):
            markers.insert(0, MARKER.match(lines[j].strip()).group(1))
            j -= 1
        code = textwrap.dedent("\n".join(body))
        kind = CODE.get(language)
        found.append((Block(f"{relative}:{start + 1}", relative, kind, code, markers)
                      if kind else None, language))
    return found


def public_objects():
    """(qualified name, object) of every module, class, function and method under kbert."""
    import kbert

    seen = set()
    for info in pkgutil.walk_packages(kbert.__path__, "kbert."):
        if info.name.startswith("kbert.programs."):
            continue  # a program defines its absl flags when imported: one per process
        module = importlib.import_module(info.name)
        yield info.name, module
        for name, value in vars(module).items():
            if name.startswith("_") or getattr(value, "__module__", None) != info.name:
                continue
            if not (inspect.isclass(value) or inspect.isfunction(value)) or id(value) in seen:
                continue
            seen.add(id(value))
            yield f"{info.name}.{name}", value
            if inspect.isclass(value):
                for attribute, member in vars(value).items():
                    if not attribute.startswith("_") and inspect.isfunction(member):
                        yield f"{info.name}.{name}.{attribute}", member


DOC_FENCE = re.compile(r"^(\s*)```python\n(.*?)^\s*```", re.S | re.M)
UNFENCED = re.compile(r"^\s*(Example|Examples|Usage):\s*\n(?!\s*```)", re.M)


def docstring_blocks():
    """(fenced python blocks, names of docstrings with an unfenced "Example:" section)."""
    blocks, unfenced = [], []
    for name, value in public_objects():
        doc = inspect.getdoc(value) if not inspect.ismodule(value) else value.__doc__
        if not doc or value.__doc__ is None:
            continue
        for k, match in enumerate(DOC_FENCE.finditer(doc)):
            module = value.__name__ if inspect.ismodule(value) else value.__module__
            blocks.append(Block(f"{name} (example {k + 1})", module, "python",
                                textwrap.dedent(match.group(2)), []))
        if UNFENCED.search(doc):
            unfenced.append(name)
    return blocks, unfenced
