"""Where kbert keeps what it can make again but should not have to: downloaded releases
(`kbert.convert.download`) and parsed corpora (`kbert.data.corpora`). One rule for both,
importable from any floor (it imports nothing of kbert)."""

import os
from pathlib import Path

CACHE_ENV = "KBERT_CACHE_DIR"


def cache_dir():
    """`$KBERT_CACHE_DIR`, default `~/.cache/kbert`."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "kbert")
