"""Pretrained releases: download once, verify the sha256, convert once, then read from a cache.

Layout of the cache (`$KBERT_CACHE_DIR`, default `~/.cache/kbert`):

    downloads/<file name>          the release archive, kept only when its sha256 verified
    downloads/<preset>/<file>      the files of a release published as loose files (Hugging
                                   Face's config.json, model.safetensors, vocab.txt)
    converted/<LAYOUT>/<preset>-<key>/
                                   the release converted once into kbert's own format
                                   (`kbert_format`: model.keras + its tokenizer files); the
                                   key comes from the sha256 of the bytes it was converted
                                   from. `LAYOUT` names the format of the folders under it:
                                   a cache written by an older kbert (converted/<preset>-<key>/,
                                   Hugging Face files) is never read, the release is
                                   converted again beside it
    known_sha256.json              URL -> sha256 of every download (trust on first use)

Files appear under their final names only when complete: downloads land in a staging folder
and are renamed into place after the hash check, so an interrupted download or a hash
mismatch leaves nothing in the cache.

A release whose preset has no sha256 is trusted on first use, as ssh's known_hosts: the first
download's sha256 is recorded in known_sha256.json, and every later download or cached copy
of that URL must match it; a changed file is refused (`ChangedReleaseError`). A user pins a
hash with `kbert.presets.load(name, sha256=...)` or `$KBERT_SHA256_<PRESET>` (e.g.
KBERT_SHA256_BERT_BASE); a pin wins over the preset's hash and the recorded one.
"""

import gzip
import hashlib
import json
import logging
import os
import re
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path

from kbert._cache import CACHE_ENV, cache_dir
from kbert.convert import kbert_format
from kbert.convert._checks import CheckpointError

SOURCE_FIELDS = ("url", "sha256", "format", "path", "files")
KNOWN_HASHES = "known_sha256.json"
# The folder of converted/ whose releases are in kbert's format as this version writes it;
# change it when that format changes, so that no older conversion is misread.
LAYOUT = "kbert-v1"
PIN_ENV = "KBERT_SHA256_"  # + the preset's name in capitals: KBERT_SHA256_BERT_BASE


class DownloadError(OSError):
    """The release could not be fetched and there is no cached copy."""


class ChangedReleaseError(ValueError):
    """A release's bytes differ from the sha256 recorded at its first download."""


def pin_variable(name):
    """The environment variable that pins preset `name`'s sha256."""
    return PIN_ENV + re.sub(r"[^A-Z0-9]", "_", name.upper())


def _check_hash(value, where):
    if not (isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value)):
        raise ValueError(f"{where}: {value!r} is not a sha256 (64 lower-case hex digits).")
    return value


def pinned(name, source, sha256=None):
    """The hash that preset `name`'s release must have: `sha256` (an argument), else
    `$KBERT_SHA256_<NAME>`, else the preset's; `None` when none names one. For a release of
    loose files, a dict of file name -> sha256 (the environment variable holds it as JSON)."""
    files = "files" in source
    variable = pin_variable(name)
    if sha256 is None and os.environ.get(variable):
        sha256, where = os.environ[variable], f"${variable}"
        if files:
            try:
                sha256 = json.loads(sha256)
            except json.JSONDecodeError:
                raise ValueError(f"${variable}: preset {name!r} is a release of files; give a "
                                 'JSON object of file -> sha256, e.g. {"config.json": '
                                 '"<sha256>", ...}.') from None
    else:
        where = f"sha256 for preset {name!r}"
    if sha256 is None:
        return source.get("sha256")
    if files:
        if not isinstance(sha256, dict) or set(sha256) - set(source["files"]):
            raise ValueError(f"{where}: preset {name!r} is a release of the files "
                             f"{', '.join(source['files'])}; give a dict of file -> sha256.")
        preset_hashes = source.get("sha256")
        return {**(preset_hashes if isinstance(preset_hashes, dict) else {}),
                **{f: _check_hash(h, f"{where}[{f!r}]") for f, h in sha256.items()}}
    return _check_hash(sha256, where)


def _known_file(cache):
    return Path(cache) / KNOWN_HASHES


def known_hashes(cache=None):
    """URL -> sha256 recorded at each URL's first download (`{}` when none)."""
    from kbert.convert._checks import read_json

    file = _known_file(cache or cache_dir())
    return read_json(file, "an object of URL -> sha256") if file.is_file() else {}


def _record(url, sha256, cache):
    """Records `url`'s sha256 in known_sha256.json (written aside and renamed into place)."""
    file = _known_file(cache)
    known = known_hashes(cache)
    if known.get(url) == sha256:
        return
    known[url] = sha256
    file.parent.mkdir(parents=True, exist_ok=True)
    staging = file.with_name(f".{file.name}.{os.getpid()}")
    staging.write_text(json.dumps(known, indent=2, sort_keys=True))
    os.replace(staging, file)


def _changed(url, recorded, actual, cache, preset, what):
    variable = pin_variable(preset) if preset else f"{PIN_ENV}<PRESET>"
    return ChangedReleaseError(
        f"{what} {url} has sha256 {actual}, but its first download had {recorded} (recorded "
        f"in {_known_file(cache)}). The release changed since kbert first trusted it, or the "
        "file was tampered with; nothing was cached. If you trust the new file, pin its hash: "
        f"{variable}={actual} (or sha256= in kbert.presets.load), or delete the URL's entry "
        f"from {_known_file(cache)}."
    )


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(url, sha256=None, cache=None, subfolder=None, preset=None):
    """The path of the verified download of `url` in the cache (downloaded if not there).

    With `sha256` the file must match it: a cached copy that does not is fetched again, and a
    download that does not is deleted before the ValueError. Without one, the file must match
    the sha256 recorded at the URL's first download (known_sha256.json), else
    `ChangedReleaseError`; the first download's is recorded (and logged). `subfolder`: a
    folder of `downloads/` to put it in; `preset`: the preset's name, for messages.
    """
    import keras

    cache = Path(cache or cache_dir())
    recorded = known_hashes(cache).get(url)
    folder = cache / "downloads"
    if subfolder:
        folder = folder / subfolder
    target = folder / Path(url.split("?")[0]).name
    if target.is_file():
        actual = sha256_of(target)
        if sha256 is None and recorded is not None and actual != recorded:
            raise _changed(url, recorded, actual, cache, preset, f"The cached copy {target} of")
        if sha256 is None or actual == sha256:
            _record(url, actual, cache)
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
        if sha256 is None and recorded is not None and actual != recorded:
            raise _changed(url, recorded, actual, cache, preset, "The download of")
        if sha256 is None and recorded is None:
            logging.warning("%s has no sha256 in its preset; downloaded file sha256=%s, "
                            "recorded in %s: every later use must match it.", url, actual,
                            _known_file(cache))
        os.replace(downloaded, target)
        _record(url, actual, cache)
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
            fetch(f"{base}/{file}", hashes.get(file), cache, subfolder=name, preset=name)
    except BaseException:  # all or nothing: drop what this call added
        for path in folder.iterdir() if folder.is_dir() else ():
            if path.name not in before and path.is_file():
                path.unlink()
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        raise
    return folder


def _converted(cache, name, source, sha256):
    """The folder of the release converted from the bytes of `sha256` (the pinned or recorded
    hash); `None` when no hash is known yet."""
    known = known_hashes(cache)
    if "files" in source:
        base = source["url"].rstrip("/")
        hashes = {f: (sha256 or {}).get(f) or known.get(f"{base}/{f}") for f in source["files"]}
        key = json.dumps(hashes, sort_keys=True) if all(hashes.values()) else None
    else:
        key = sha256 or known.get(source["url"])
    if key is None:
        return None
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(cache) / "converted" / LAYOUT / f"{name}-{digest}"


def _read_converted(folder):
    """The converted release in `folder`, or `None` when it is not there (yet)."""
    if not kbert_format.is_kbert(folder):
        return None
    return kbert_format.read(folder)


def pretrained(name, source, cache=None, sha256=None):
    """The `Checkpoint` of preset `name`'s release, converted on first use and cached.

    The release must match its pinned sha256 (`sha256`, `$KBERT_SHA256_<NAME>` or the
    preset's), else the one recorded at its first download (trust on first use).

    Args:
        name: the preset name (the cache folder's name).
        source: the preset's "weights" dict: `url`, `sha256` (or null), `format` ("tf1",
            "hf" or "keras_hub") and either `path`, the checkpoint folder inside the archive
            at `url`, or `files`, the file names to fetch from the folder at `url` (with
            `sha256` a dict of file name -> hash).
        cache: the cache folder (default `$KBERT_CACHE_DIR`).
        sha256: a hash to pin (a dict of file -> hash for a release of files).
    """
    from kbert import convert

    unknown = set(source) - set(SOURCE_FIELDS) - {"description"}
    if unknown or "url" not in source or "format" not in source:
        raise ValueError(
            f"Preset {name!r}: its weights entry needs url and format (fields: "
            f"{', '.join(SOURCE_FIELDS)}); got {sorted(source)}."
        )
    cache = Path(cache or cache_dir())
    sha256 = pinned(name, source, sha256)
    converted = _converted(cache, name, source, sha256)
    if converted is not None and (found := _read_converted(converted)) is not None:
        return found
    try:
        if "files" in source:
            folder = _fetch_files(name, {**source, "sha256": sha256}, cache)
        else:
            archive = fetch(source["url"], sha256, cache, preset=name)
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
    converted = _converted(cache, name, source, sha256)  # the downloads' hashes are known now
    if (found := _read_converted(converted)) is not None:
        return found
    try:  # the richest model the release holds, written aside and renamed into place
        kbert_format.write(checkpoint, converted, head="auto")
    except OSError:
        if not kbert_format.is_kbert(converted):  # not a concurrent writer's result
            raise
    logging.info("Converted %s into %s.", source["url"], converted)
    return _read_converted(converted)
