"""docs/code-lines.md: the table of lines of user code is what its blocks hold (kbert's blocks
run in tests/docs/test_examples.py; the peers' are ```py blocks, counted here, not run)."""

import re

from tests.docs.blocks import ROOT

PAGE = ROOT / "docs" / "code-lines.md"
LIBRARIES = ("kbert", "keras-hub", "transformers")


def lines(code):
    """Non-blank lines that are not comments."""
    return sum(1 for line in code.splitlines() if line.strip() and not line.strip().startswith("#"))


def sections():
    """{job title: {library: (the lines the text says, the lines of its block)}}."""
    text = PAGE.read_text(encoding="utf-8")
    out = {}
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        title, body = part.split("\n", 1)
        found = re.findall(r"^(kbert|keras-hub|transformers) \((\d+) lines[^\n]*\n\n```(?:python|py)\n"
                           r"(.*?)```", body, flags=re.M | re.S)
        out[title.strip()] = {library: (int(said), lines(code)) for library, said, code in found}
    return out


def test_the_table_counts_the_blocks():
    found = sections()
    assert len(found) == 4
    rows = re.findall(r"^\| ([^|]+) \| (\d+) \| (\d+)[^|]* \| (\d+) \|$",
                      PAGE.read_text(encoding="utf-8"), flags=re.M)
    assert [row[0].strip() for row in rows] == list(found)
    for title, *counts in rows:
        blocks = found[title.strip()]
        assert sorted(blocks) == sorted(LIBRARIES), title
        for library, count in zip(LIBRARIES, counts):
            said, counted = blocks[library]
            assert int(count) == said == counted, (title, library, count, said, counted)
        # kbert's blocks are the shortest of the three.
        assert blocks["kbert"][1] < min(blocks["keras-hub"][1], blocks["transformers"][1])
