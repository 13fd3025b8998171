"""Hugging Face hub ids in `kbert.load`: read from the local hub cache, never downloaded.

A spec such as "distilbert-base-uncased-finetuned-sst-2-english" or
"sentence-transformers/all-MiniLM-L6-v2" that is neither a folder nor a preset is looked up
in the cache that `huggingface_hub` (and so transformers, `hf download` and
`snapshot_download`) fills: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
`~/.cache/huggingface/hub`, in its own layout (`models--ORG--NAME/refs/main` names the
snapshot under `snapshots/`). kbert itself never goes online (as with `HF_HUB_OFFLINE=1`):
where the cache lacks the model, the error says how to fetch it.
"""

import os
import re

# A repository id: "name" or "org/name" of letters, digits, "-", "_" and ".".
_HUB_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9_.-]*/)?[A-Za-z0-9][A-Za-z0-9_.-]*$")


def looks_like_hub_id(spec):
    return bool(_HUB_ID.match(spec)) and ".." not in spec and not spec.endswith(".keras")


def cache_dir():
    """Where huggingface_hub keeps its downloads, by its own variables."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "huggingface")
    return os.path.join(home, "hub")


def cached_snapshot(repo_id, revision="main"):
    """The folder of `repo_id`'s snapshot at `revision` (a branch, tag or commit) in the
    hub cache, or None where the cache has none."""
    folder = os.path.join(cache_dir(), "models--" + repo_id.replace("/", "--"))
    ref = os.path.join(folder, "refs", revision)
    commit = revision
    if os.path.isfile(ref):
        with open(ref, encoding="utf-8") as f:
            commit = f.read().strip()
    snapshot = os.path.join(folder, "snapshots", commit)
    return snapshot if os.path.isdir(snapshot) else None


def not_cached(repo_id, unknown):
    """The error for a hub id that the cache lacks: `unknown` (what else it is not), how to
    fetch it, and where kbert looks."""
    return ValueError(
        f"{unknown} As a Hugging Face hub id, the hub cache ({cache_dir()}) has no snapshot of "
        f"it, and kbert does not download: fetch it "
        f"with `hf download {repo_id}` (or `python -c \"import huggingface_hub; "
        f"huggingface_hub.snapshot_download('{repo_id}')\"`), then load {repo_id!r} again; or "
        f"`hf download {repo_id} --local-dir DIR` and load DIR.")
