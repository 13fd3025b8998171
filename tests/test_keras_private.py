"""kbert._keras_private: every private Keras / keras-hub / TensorFlow API behind a guard."""

import pathlib
import re

import keras
import pytest

from kbert import _keras_private

KBERT = pathlib.Path(__file__).parents[1] / "kbert"


@pytest.mark.parametrize("name", sorted(_keras_private.PRIVATE_APIS))
def test_a_guard_refuses_an_untested_version_naming_the_api(name, monkeypatch):
    api = _keras_private.PRIVATE_APIS[name]
    module = pytest.importorskip(api.package)
    _keras_private.guard(name)  # the pinned versions pass
    monkeypatch.setattr(module, "__version__", "99.0.0")
    monkeypatch.delenv("KBERT_ALLOW_UNTESTED_KERAS", raising=False)
    with pytest.raises(_keras_private.UntestedVersionError, match=re.escape(api.what)):
        _keras_private.guard(name)
    monkeypatch.setenv("KBERT_ALLOW_UNTESTED_KERAS", "1")
    _keras_private.guard(name)


def test_tensorflow_internals_are_imported_only_behind_a_guard():
    """`tensorflow.python` is TensorFlow's private tree: a module importing from it must guard
    the API it uses (kbert._keras_private lists it)."""
    unguarded = []
    for path in KBERT.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if re.search(r"^\s*(from|import) tensorflow\.python", text, re.M):
            if "_keras_private.guard(" not in text:
                unguarded.append(str(path.relative_to(KBERT.parent)))
    assert not unguarded, f"tensorflow.python imported without a guard in {unguarded}"


def test_the_archive_writer_is_guarded(monkeypatch):
    from kbert.serving import writer as archive

    monkeypatch.setattr(keras, "__version__", "99.0.0")
    monkeypatch.delenv("KBERT_ALLOW_UNTESTED_KERAS", raising=False)
    with pytest.raises(_keras_private.UntestedVersionError, match="ExportArchive"):
        archive.write_archive(keras.export.ExportArchive(), "/nonexistent")
