"""One string names any corpus: used by the command-line tools and by Python callers."""

from kbert.data import corpora

INPUT_HELP = (
    "'stdlib' (the Python standard library's docstrings, no download), "
    "'tfds:NAME[:SPLIT[:TEXT_KEY]]' (a tensorflow-datasets dataset), "
    "or comma-separated glob patterns of BERT-format text files (.gz allowed)"
)


def documents(spec):
    """A dataset of documents for `spec`: see `INPUT_HELP`."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"Empty input {spec!r}; give {INPUT_HELP}.")
    if spec == "stdlib":
        return corpora.stdlib_docstrings()
    if spec.startswith("tfds:"):
        parts = spec.split(":")[1:]
        name = parts[0]
        split = parts[1] if len(parts) > 1 and parts[1] else "train"
        text_key = parts[2] if len(parts) > 2 and parts[2] else "text"
        return corpora.tfds_documents(name, split=split, text_key=text_key)
    return corpora.text_files([p for p in spec.split(",") if p])
