"""Pretrained releases: download once, verify the sha256, convert once, then read from a cache.

Layout of the cache (`$KBERT_CACHE_DIR`, default `~/.cache/kbert`):

    downloads/<file name>          the release archive, kept only when its sha256 verified
    downloads/<preset>/<file>      the files of a release published as loose files (Hugging
                                   Face's config.json, model.safetensors, vocab.txt)
    converted/<preset>-<key>/      the release converted to the Hugging Face format
                                   (config.json, model.safetensors, vocab.txt)

Files appear under their final names only when complete: downloads land in a staging folder
and are renamed into place after the hash check, so an interrupted download or a hash
mismatch leaves nothing in the cache.
"""

import gzip
import hashlib
import json
import logging
import os
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path

from kbert._cache import CACHE_ENV, cache_dir
from kbert.convert import hugging_face
from kbert.convert._checks import CheckpointError

SOURCE_FIELDS = ("url", "sha256", "format", "path", "files")


class DownloadError(OSError):
    """The release could not be fetched and there is no cached copy."""


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(url, sha256=None, cache=None, subfolder=None):
    """The path of the verified download of `url` in the cache (downloaded if not there).

    With `sha256` the file must match it: a cached copy that does not is fetched again, and a
    download that does not is deleted before the ValueError. Without one, the computed hash is
    logged so that it can be recorded. `subfolder`: a folder of `downloads/` to put it in.
    """
    import keras

    folder = Path(cache or cache_dir()) / "downloads"
    if subfolder:
        folder = folder / subfolder
    target = folder / Path(url.split("?")[0]).name
    if target.is_file() and (sha256 is None or sha256_of(target) == sha256):
        return target
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".partial-", dir=folder))
    try:
        try:
            downloaded = keras.utils.get_file(target.name, origin=url, cache_dir=str(staging),
                                              cache_subdir=".")
        except Exception as error:  # keras raises a bare Exception for URL errors
            raise DownloadError(f"Could not download {url}: {error}") from error
        actual = sha256_of(downloaded)
        if sha256 is not None and actual != sha256:
            raise ValueError(
                f"sha256 mismatch for {url}: expected {sha256}, got {actual}. The file was "
                "deleted; nothing was cached."
            )
        if sha256 is None:
            logging.warning("%s has no sha256 in its preset; downloaded file sha256=%s.", url,
                            actual)
        os.replace(downloaded, target)
        return target
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _extract(archive, destination):
    """Unpacks a .zip, .tar.gz or .tar release; CheckpointError naming the archive when it is
    truncated, corrupted or not of its kind."""
    name = archive.name
    if not name.endswith((".zip", ".tar.gz", ".tgz", ".tar")):
        raise ValueError(f"{archive}: unknown archive type; expected .zip, .tar.gz or .tar.")
    kind = "zip" if name.endswith(".zip") else "tar"
    try:
        if kind == "zip":
            with zipfile.ZipFile(archive) as z:
                for member in z.namelist():  # refuse absolute paths and ../ escapes
                    if Path(member).is_absolute() or ".." in Path(member).parts:
                        raise ValueError(f"{archive}: unsafe member path {member!r}.")
                z.extractall(destination)
        else:
            with tarfile.open(archive) as t:
                t.extractall(destination, filter="data")
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as error:
        if isinstance(error, tarfile.FilterError):  # a member that points outside
            raise ValueError(f"{archive}: unsafe member ({error}).") from None
        raise CheckpointError(
            f"{archive}: cannot unpack it as a {kind} archive ({error}); the download is "
            "truncated or corrupted. Delete it to download it again."
        ) from None


def _checkpoint_folder(unpacked, hint):
    """`hint` inside the archive, else the one folder that holds a checkpoint."""
    from kbert import convert

    if hint and (unpacked / hint).exists():
        return unpacked / hint
    found = []
    for folder in [unpacked, *sorted(p for p in unpacked.rglob("*") if p.is_dir())]:
        try:
            convert.detect_format(folder)
        except (ValueError, FileNotFoundError):
            continue
        found.append(folder)
    if len(found) != 1:
        raise ValueError(
            f"The archive holds {len(found)} checkpoint folders ({[str(f) for f in found]}); "
            "name one with the preset's weights.path."
        )
    return found[0]


def _fetch_files(name, source, cache):
    """A release published as loose files (`files`, fetched from `url`/<file>): the folder of
    the verified downloads. `sha256`, when given, maps each file name to its hash."""
    hashes = source.get("sha256") or {}
    if not isinstance(hashes, dict):
        raise ValueError(f"Preset {name!r}: with files, sha256 maps each file to its hash.")
    base = source["url"].rstrip("/")
    folder = Path(cache) / "downloads" / name
    before = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
    try:
        for file in source["files"]:
            fetch(f"{base}/{file}", hashes.get(file), cache, subfolder=name)
    except BaseException:  # all or nothing: drop what this call added
        for path in folder.iterdir() if folder.is_dir() else ():
            if path.name not in before and path.is_file():
                path.unlink()
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        raise
    return folder


def pretrained(name, source, cache=None):
    """The `Checkpoint` of preset `name`'s release, converted on first use and cached.

    Args:
        name: the preset name (the cache folder's name).
        source: the preset's "weights" dict: `url`, `sha256` (or null), `format` ("tf1",
            "hf" or "keras_hub") and either `path`, the checkpoint folder inside the archive
            at `url`, or `files`, the file names to fetch from the folder at `url` (with
            `sha256` a dict of file name -> hash).
    """
    from kbert import convert

    unknown = set(source) - set(SOURCE_FIELDS) - {"description"}
    if unknown or "url" not in source or "format" not in source:
        raise ValueError(
            f"Preset {name!r}: its weights entry needs url and format (fields: "
            f"{', '.join(SOURCE_FIELDS)}); got {sorted(source)}."
        )
    cache = Path(cache or cache_dir())
    sha256 = source.get("sha256")
    key = (json.dumps(sha256, sort_keys=True) if isinstance(sha256, dict) else sha256) or \
        source["url"]
    converted = cache / "converted" / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    if (converted / "config.json").is_file():
        return hugging_face.read(converted)
    try:
        if "files" in source:
            folder = _fetch_files(name, source, cache)
        else:
            archive = fetch(source["url"], sha256, cache)
    except DownloadError as error:
        raise DownloadError(
            f"{error}\nNo cached copy of preset {name!r} in {cache} (set ${CACHE_ENV} to use "
            f"another cache). Download {source['url']} yourself, unpack it, and pass its "
            f"folder: kbert.presets.load({name!r}, weights='/path/to/checkpoint'); or use "
            "weights=None for a random initialisation."
        ) from error
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        if "files" not in source:
            unpacked = Path(scratch) / "unpacked"
            _extract(archive, unpacked)
            folder = _checkpoint_folder(unpacked, source.get("path"))
        checkpoint = convert.read(folder, format=source["format"])
    try:
        hugging_face.write(checkpoint, converted)  # written aside, renamed into place
    except OSError:
        if not (converted / "config.json").is_file():  # not a concurrent writer's result
            raise
    logging.info("Converted %s into %s.", source["url"], converted)
    return hugging_face.read(converted)
