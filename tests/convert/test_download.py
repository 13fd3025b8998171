"""presets.load with pretrained weights, against a release served on 127.0.0.1."""

import functools
import hashlib
import http.server
import json
import logging
import os
import shutil
import threading
from pathlib import Path

import pytest

import kbert.convert
from kbert import presets
from kbert.convert import download
from tests.convert import _checkpoints

NAME = "bert_served"


class _Handler(http.server.SimpleHTTPRequestHandler):
    requests = []

    def do_GET(self):  # noqa: N802 - the http.server API
        _Handler.requests.append(self.path)
        super().do_GET()

    def log_message(self, *args):
        pass


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A google-style release zip on a local HTTP server, and a preset that names it."""
    original = _checkpoints.random_pretrainer(seed=5)
    release = _checkpoints.write_tf1_release(original, tmp_path / "build" / "uncased_test")
    www = tmp_path / "www"
    www.mkdir()
    archive = shutil.make_archive(str(www / "uncased_test"), "zip", release.parent)
    sha256 = hashlib.sha256(Path(archive).read_bytes()).hexdigest()
    _Handler.requests = []
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Handler, directory=str(www)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    preset_folder = tmp_path / "presets"
    preset_folder.mkdir()
    monkeypatch.setattr(presets, "_SEARCH_PATH", presets._SEARCH_PATH + (preset_folder,))
    monkeypatch.setenv(download.CACHE_ENV, str(tmp_path / "cache"))

    def write_preset(sha256=sha256, url=f"http://127.0.0.1:{server.server_port}/uncased_test.zip"):
        (preset_folder / f"{NAME}.json").write_text(json.dumps({
            "name": NAME, "model": "bert", "description": "served by the test",
            "config": original.backbone.config.to_dict(),
            "tokenizer": {"type": "wordpiece", "lowercase": True},
            "weights": {"url": url, "sha256": sha256, "format": "tf1", "path": "uncased_test"},
        }))

    write_preset()
    yield original, write_preset, release, tmp_path / "cache"
    server.shutdown()
    server.server_close()


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_download_verify_convert_then_cache_hit(served):
    original, _, _, cache = served
    model = presets.load(NAME)
    _checkpoints.assert_same_outputs(original, model, _checkpoints.inputs())
    assert _Handler.requests == ["/uncased_test.zip"]
    assert presets.load_tokenizer(NAME).vocabulary == _checkpoints.VOCABULARY
    files = _files(cache)
    assert "downloads/uncased_test.zip" in files
    assert any(f.startswith(f"converted/{download.LAYOUT}/") and f.endswith("model.keras")
               for f in files)
    # A cache hit: no request, the same weights, any head.
    backbone = presets.load(NAME, head=None, max_sequence_length=16)
    _checkpoints.assert_same_outputs(original.backbone, backbone, _checkpoints.inputs())
    assert len(_Handler.requests) == 1


def test_a_second_load_reads_the_converted_cache_without_converting(served, monkeypatch):
    """The release is converted once, into kbert's own format (model.keras + vocab.txt); a
    later load reads that folder: neither the release's reader nor a writer runs again."""
    original, _, _, cache = served
    presets.load(NAME, head=None)
    (converted,) = (cache / "converted" / download.LAYOUT).iterdir()
    assert sorted(p.name for p in converted.iterdir()) == [
        "model.keras", "tokenizer_config.json", "vocab.txt"]

    def refuse(*args, **kwargs):
        raise AssertionError("converted again")

    for module, name in [(kbert.convert, "read"), (kbert.convert.kbert_format, "write"),
                         (kbert.convert.tf1, "read"), (kbert.convert.hugging_face, "read")]:
        monkeypatch.setattr(module, name, refuse)
    model = presets.load(NAME)
    _checkpoints.assert_same_outputs(original, model, _checkpoints.inputs())
    assert presets.load_tokenizer(NAME).vocabulary == _checkpoints.VOCABULARY
    assert len(_Handler.requests) == 1


def test_an_older_cache_layout_is_not_read(served):
    """A Hugging Face folder that an older kbert left under converted/ (same key) is ignored:
    the release is converted again into the current layout, beside it."""
    original, _, _, cache = served
    presets.load(NAME, head=None)
    (converted,) = (cache / "converted" / download.LAYOUT).iterdir()
    old = cache / "converted" / converted.name
    kbert.convert.save_hugging_face(_checkpoints.random_pretrainer(seed=7), old,
                                    vocabulary=_checkpoints.VOCABULARY)
    shutil.rmtree(converted)
    model = presets.load(NAME)
    _checkpoints.assert_same_outputs(original, model, _checkpoints.inputs())  # not seed 7's
    assert kbert.convert.kbert_format.is_kbert(converted)
    assert (old / "config.json").is_file()  # left alone


def test_hash_mismatch_leaves_nothing_in_the_cache(served):
    _, write_preset, _, cache = served
    write_preset(sha256="0" * 64)
    with pytest.raises(ValueError, match="sha256 mismatch .* expected 0000.*nothing was cached"):
        presets.load(NAME)
    assert _Handler.requests == ["/uncased_test.zip"]
    assert _files(cache) == []


def test_offline_without_cache_names_the_url_and_the_way_out(served):
    _, write_preset, _, cache = served
    write_preset(url="http://127.0.0.1:9/nowhere.zip")  # port 9 (discard): refused
    with pytest.raises(download.DownloadError) as error:
        presets.load(NAME)
    message = str(error.value)
    assert "http://127.0.0.1:9/nowhere.zip" in message
    assert f"kbert.presets.load({NAME!r}, weights='/path/to/checkpoint')" in message
    assert _files(cache) == []


def test_unrecorded_hash_is_logged(served, caplog):
    original, write_preset, _, _ = served
    write_preset(sha256=None)
    with caplog.at_level(logging.WARNING):
        model = presets.load(NAME, head=None)
    assert "has no sha256 in its preset; downloaded file sha256=" in caplog.text
    _checkpoints.assert_same_outputs(original.backbone, model, _checkpoints.inputs())


def test_local_checkpoint_path(served, tmp_path):
    original, _, release, _ = served
    model = presets.load(NAME, weights=str(release))
    _checkpoints.assert_same_outputs(original, model, _checkpoints.inputs())
    assert _Handler.requests == []
    with pytest.raises(ValueError, match="is not a bert_tiny checkpoint .*hidden_size: preset "
                                         "128, checkpoint 16"):
        presets.load("bert_tiny", weights=str(release))


@pytest.fixture
def www(tmp_path, monkeypatch):
    """A folder served on 127.0.0.1, a preset folder on the search path and an empty cache:
    (folder, base URL, write_preset(name, family, config, weights))."""
    folder = tmp_path / "www"
    folder.mkdir()
    _Handler.requests = []
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Handler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    preset_folder = tmp_path / "presets"
    preset_folder.mkdir()
    monkeypatch.setattr(presets, "_SEARCH_PATH", presets._SEARCH_PATH + (preset_folder,))
    monkeypatch.setenv(download.CACHE_ENV, str(tmp_path / "cache"))

    def write_preset(name, family, config, weights):
        (preset_folder / f"{name}.json").write_text(json.dumps({
            "name": name, "model": family, "description": "served by the test",
            "config": config.to_dict(), "tokenizer": {}, "weights": weights}))

    yield folder, f"http://127.0.0.1:{server.server_port}", write_preset
    server.shutdown()
    server.server_close()


@pytest.mark.slow
def test_an_albert_release_tar_gz(www, tmp_path):
    from tests.convert import _families

    folder, base, write_preset = www
    release = _families.write_albert_tf1_release(tmp_path / "build" / "albert_base")
    shutil.make_archive(str(folder / "albert_base_v2"), "gztar", release.parent)
    config = kbert.convert.read(_families.FIXTURES / "albert").config
    write_preset("albert_served", "albert", config,
                 {"url": f"{base}/albert_base_v2.tar.gz", "sha256": None, "format": "tf1",
                  "path": "albert_base"})
    _families.check_against_transformers(presets.load("albert_served"), "albert")
    assert presets.load_tokenizer("albert_served").tokenize("the word").numpy().tolist() == [
        5, 18]
    assert _Handler.requests == ["/albert_base_v2.tar.gz"]


def test_a_release_of_loose_hugging_face_files(www):
    from tests.convert import _families

    folder, base, write_preset = www
    files = ["config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json"]
    for file in files:
        shutil.copy(_families.FIXTURES / "distil_bert" / file, folder / file)
    hashes = {f: hashlib.sha256((folder / f).read_bytes()).hexdigest() for f in files}
    config = kbert.convert.read(_families.FIXTURES / "distil_bert").config
    weights = {"url": f"{base}/", "sha256": hashes, "format": "hf", "files": files}
    write_preset("distil_served", "distil_bert", config, weights)
    _families.check_against_transformers(presets.load("distil_served"), "distil_bert")
    assert sorted(_Handler.requests) == sorted(f"/{f}" for f in files)
    presets.load("distil_served", head=None)  # a cache hit
    assert len(_Handler.requests) == len(files)
    # One wrong hash: the files this call fetched are gone again, and nothing is converted.
    cache = download.cache_dir()
    shutil.rmtree(cache)
    write_preset("distil_served", "distil_bert", config,
                 {**weights, "sha256": {**hashes, "vocab.txt": "0" * 64}})
    with pytest.raises(ValueError, match="sha256 mismatch .*vocab.txt"):
        presets.load("distil_served")
    # Only the record of the hashes verified (trust on first use) stays; not vocab.txt's.
    assert _files(cache) == ["known_sha256.json"]
    assert f"{base}/vocab.txt" not in download.known_hashes(cache)


def _republish(release, tmp_path, seed):
    """Replaces the served zip with a release of other weights; its sha256."""
    other = _checkpoints.write_tf1_release(_checkpoints.random_pretrainer(seed=seed),
                                           tmp_path / f"build{seed}" / "uncased_test")
    archive = shutil.make_archive(str(tmp_path / "www" / "uncased_test"), "zip", other.parent)
    return hashlib.sha256(Path(archive).read_bytes()).hexdigest()


def test_a_release_without_sha256_is_trusted_on_first_use(served, tmp_path):
    """The first download's sha256 is recorded beside the cache; a fresh download that differs
    (the URL now serves other bytes) and a cached copy that was changed are refused, naming
    the URL, both hashes and how to pin; a pin (argument or environment) accepts the new
    file."""
    original, write_preset, release, cache = served
    write_preset(sha256=None)
    url = presets.get(NAME)["weights"]["url"]
    presets.load(NAME, head=None)
    first = download.sha256_of(cache / "downloads" / "uncased_test.zip")
    assert download.known_hashes(cache) == {url: first}
    presets.load(NAME, head=None)  # a later use, from the cache
    assert len(_Handler.requests) == 1

    new = _republish(release, tmp_path, seed=9)
    shutil.rmtree(cache / "downloads")
    shutil.rmtree(cache / "converted")
    with pytest.raises(download.ChangedReleaseError) as error:
        presets.load(NAME, head=None)
    message = str(error.value)
    for text in (url, first, new, "KBERT_SHA256_BERT_SERVED=" + new, "known_sha256.json"):
        assert text in message, (text, message)
    assert _files(cache) == ["known_sha256.json"]  # the changed download was not kept

    # A cached copy changed on disk is refused too.
    shutil.copy(tmp_path / "www" / "uncased_test.zip", cache / "downloads" / "uncased_test.zip")
    with pytest.raises(download.ChangedReleaseError, match="The cached copy .*uncased_test.zip"):
        presets.load(NAME, head=None)

    # Pinning the new hash (argument, then environment) accepts it and records it.
    shutil.rmtree(cache / "downloads")
    model = presets.load(NAME, head=None, sha256=new)
    assert download.known_hashes(cache) == {url: new}
    with pytest.raises(AssertionError):  # the new release's weights, not the first one's
        _checkpoints.assert_same_outputs(original.backbone, model, _checkpoints.inputs())
    os.environ[download.pin_variable(NAME)] = first
    try:
        with pytest.raises(ValueError, match=f"sha256 mismatch .*expected {first}"):
            presets.load(NAME, head=None)
    finally:
        del os.environ[download.pin_variable(NAME)]


def test_a_pin_that_is_not_a_sha256_is_refused(served, monkeypatch):
    _, write_preset, _, cache = served
    write_preset(sha256=None)
    with pytest.raises(ValueError, match="'abc' is not a sha256 .*64 lower-case hex"):
        presets.load(NAME, sha256="abc")
    monkeypatch.setenv("KBERT_SHA256_BERT_SERVED", "xyz")
    with pytest.raises(ValueError, match=r"\$KBERT_SHA256_BERT_SERVED: 'xyz' is not a sha256"):
        presets.load(NAME)
    with pytest.raises(ValueError, match="sha256= pins the hash .*weights=None"):
        presets.load(NAME, weights=None, sha256="0" * 64)
    assert _Handler.requests == []


def test_a_roberta_release_of_the_presets_files(www):
    """roberta_base's file list (config.json, model.safetensors, vocab.json, merges.txt), served
    from the tiny RoBERTa fixture: the masked LM and the byte-level BPE come through the
    download, the conversion and the cache."""
    from tests.convert import _families, test_roberta_checkpoints

    folder, base, write_preset = www
    files = presets.get("roberta_base")["weights"]["files"]
    assert "vocab.json" in files and "merges.txt" in files
    for file in files:
        shutil.copy(_families.FIXTURES / "roberta" / file, folder / file)
    hashes = {f: hashlib.sha256((folder / f).read_bytes()).hexdigest() for f in files}
    config = kbert.convert.read(_families.FIXTURES / "roberta").config
    write_preset("roberta_served", "roberta", config,
                 {"url": f"{base}/", "sha256": hashes, "format": "hf", "files": files})
    test_roberta_checkpoints.check_against_transformers(presets.load("roberta_served"))
    tokenizer = presets.load_tokenizer("roberta_served")  # from the converted cache
    expected = kbert.convert.load_tokenizer(_families.FIXTURES / "roberta")
    assert tokenizer.merges == expected.merges and tokenizer.vocabulary == expected.vocabulary
    assert len(_Handler.requests) == len(files)
