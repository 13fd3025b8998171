"""The wheel works on its own: `python -m build` makes an sdist and a wheel (from the sdist),
which installs into a fresh virtual environment outside the repository that holds only the
core requirements, in versions other than the tested ones, and keeps them.

Nothing is downloaded: the fresh environment sees the core requirements' closure through a
`.pth` folder of links into this environment's site-packages (only those distributions, so
no extra is there), and this environment's pip installs the wheel into it with `--no-index`.
TensorFlow, Keras and NumPy are shown to it at a newer patch version inside kbert's ranges
(their dist-info copied with that version, as a user's newer install would be), and then
NumPy outside them, which `pip check` reports.
"""

import importlib.metadata as metadata
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow  # a build, a virtual environment, three TensorFlow start-ups

# What the build reads (setup.py's packages, package_dir and long_description).
SOURCES = ("setup.py", "pyproject.toml", "README.md", "LICENSE", "kbert", "presets",
           "tools/flags")
# Shown to the fresh environment at another version inside kbert's ranges.
NEWER = ("tensorflow", "keras", "numpy")

IN_THE_WHEEL = """
import json, sys
import kbert
from kbert.tasks import TextClassifier
from kbert.tokenizers import WordPieceTokenizer

result = {"file": kbert.__file__, "version": kbert.__version__}
pretrainer = kbert.load("bert_tiny", weights=None).model
result["pretrainer"] = type(pretrainer).__name__
vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film"]
pipe = kbert.pipeline("text-classification", tokenizer=WordPieceTokenizer(vocabulary),
                      model=TextClassifier(pretrainer.backbone, label_names=["neg", "pos"]))
result["answer"] = pipe("a good film")
try:
    from kbert.analysis import ProbeResult, pictures
    pictures.plot_probe(ProbeResult("tagging", [0.5, 0.7], 0.5, 8, 4, "token"), "probe.png")
    result["missing extra"] = None
except ImportError as error:
    result["missing extra"] = str(error)
result["extras present"] = [name for name in ("matplotlib", "sklearn", "keras_hub")
                            if __import__("importlib.util").util.find_spec(name)]
print("RESULT", json.dumps(result))
"""


def _closure(requirements):
    """{canonical name: distribution} of `requirements` (requirement strings without their
    extras' parts) and of what they require, as installed here."""
    found, todo = {}, [(Requirement(r), "") for r in requirements]
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        if name not in found:
            found[name] = metadata.distribution(requirement.name)
            for child in found[name].requires or ():
                todo += [(Requirement(child), e) for e in ("", *requirement.extras)]
        elif requirement.extras:  # the same distribution, asked for with extras
            for child in found[name].requires or ():
                todo += [(Requirement(child), e) for e in requirement.extras]
    return found


def _record(dist):
    """The paths `dist` installed, as its RECORD lists them (read as text: building a
    PackagePath per file of every distribution took 30 s)."""
    record = dist.read_text("RECORD")
    if record is None:
        return [str(file) for file in dist.files or ()]
    return [line.rsplit(",", 2)[0].strip('"') for line in record.splitlines() if line]


def _link_core(core, dists):
    """Links into `core` what `dists` installed (each in its own site folder): a whole
    top-level entry where only they own files under it, else their files one by one (a
    namespace such as google/)."""
    wanted, owners = set(dists), {}
    for dist in metadata.distributions():
        name, root = canonicalize_name(dist.name or ""), str(dist.locate_file(""))
        for path in _record(dist):
            owners.setdefault((root, path.split("/", 1)[0]), set()).add(name)
    for dist in dists.values():
        root = str(dist.locate_file(""))
        for path in _record(dist):
            top = path.split("/", 1)[0]
            if top == ".." or os.path.islink(core / top) or not os.path.exists(
                    os.path.join(root, path)):
                continue
            if owners[(root, top)] <= wanted:
                (core / top).symlink_to(os.path.join(root, top))
            elif not (core / path).exists():
                (core / path).parent.mkdir(parents=True, exist_ok=True)
                (core / path).symlink_to(os.path.join(root, path))


def _show_at(core, name, version):
    """The distribution `name`'s dist-info in `core` as a real folder (no longer a link)
    whose metadata says `version`."""
    [info] = core.glob(f"{name.replace('-', '_')}-*.dist-info")
    if info.is_symlink():
        target = info.readlink()
        info.unlink()
        shutil.copytree(target, info)
    lines = (info / "METADATA").read_text(encoding="utf-8").split("\n")
    [at] = [i for i, line in enumerate(lines) if line.startswith("Version: ")]
    lines[at] = f"Version: {version}"
    (info / "METADATA").write_text("\n".join(lines), encoding="utf-8")
    info.rename(info.with_name(f"{info.name.split('-')[0]}-{version}.dist-info"))


def _run(command, **kwargs):
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True,
                          timeout=900, **kwargs)
    assert done.returncode == 0, (command, done.stdout[-3000:], done.stderr[-3000:])
    return done


def test_the_wheel_installs_beside_newer_core_packages_and_runs_alone(tmp_path):
    source = tmp_path / "source"
    for name in SOURCES:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / name, source / name)
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", tmp_path / "dist",
          source])
    [sdist] = (tmp_path / "dist").glob("kbert[-_]keras-*.tar.gz")  # setuptools < 69: -
    [wheel] = (tmp_path / "dist").glob("kbert_keras-*-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        requires = [line.split(": ", 1)[1] for line in
                    archive.read(info).decode().splitlines() if line.startswith("Requires-Dist")]
    assert {"kbert/programs/flags/quickstart.flags", "kbert/preset_files/bert_tiny.json",
            "kbert/programs/export.py"} <= names
    assert not any(n.startswith(("tests/", "tools/")) for n in names)
    core_requires = [r for r in requires if "extra ==" not in r]
    assert core_requires and len(core_requires) < len(requires)

    dists = _closure(core_requires)
    core = tmp_path / "core"
    core.mkdir()
    _link_core(core, dists)
    newer = {}
    for name in NEWER:
        installed = Version(dists[name].version)
        newer[name] = f"{installed.major}.{installed.minor}.{installed.micro + 1}"
        assert all(Requirement(r).specifier.contains(newer[name]) for r in core_requires
                   if canonicalize_name(Requirement(r).name) == name), (name, newer[name])
        _show_at(core, name, newer[name])

    # The fresh environment has no pip of its own: this environment's pip (the tested one)
    # installs into it (--python).
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    python, bin_ = venv / "bin" / "python", venv / "bin"
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    Path(purelib.stdout.strip(), "kbert_core.pth").write_text(f"{core}\n")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("PIP_") and key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_CONFIG_FILE=os.devnull)  # no index, find-links or constraint of a pip.conf
    pip = [sys.executable, "-m", "pip", "--python", python]
    work = tmp_path / "work"  # neither the repository nor the source copy
    work.mkdir()

    installed = _run([*pip, "install", "--no-index", wheel], cwd=work, env=env)
    assert "Successfully installed kbert-keras-" in installed.stdout
    assert "Uninstalling" not in installed.stdout, installed.stdout
    versions = {p["name"].lower(): p["version"] for p in json.loads(_run(
        [*pip, "list", "--format=json"], cwd=work, env=env).stdout)}
    assert {name: versions[name] for name in NEWER} == newer
    assert "No broken requirements" in _run([*pip, "check"], cwd=work, env=env).stdout

    done = _run([python, "-c", IN_THE_WHEEL], cwd=work, env=env)
    result = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert result["file"].startswith(purelib.stdout.strip())  # the wheel's, not the clone's
    assert result["version"] == wheel.name.split("-")[1]
    assert result["pretrainer"] == "BertPretrainer"
    [answer] = result["answer"]
    assert answer["label"] in ("neg", "pos") and 0 <= answer["score"] <= 1
    assert result["extras present"] == []
    assert result["missing extra"].endswith(
        'needs matplotlib, which is not installed: pip install "kbert-keras[analysis]".')
    assert not (work / "probe.png").exists()

    run = _run([bin_ / "kbert-pretrain", "--flagfile=quickstart", "--train_steps=4",
                "--steps_per_loop=2", "--warmup_steps=1", "--global_batch_size=4",
                "--learned_vocabulary_size=1000", "--jit_compile=false",  # XLA: longer than 4 steps
                "--model_dir=runs/wheel", "--export_dir="],
               cwd=work, env=env)
    assert list((work / "runs" / "wheel").glob("checkpoints/*")), run.stdout[-2000:]
    assert "mlm" in (run.stdout + run.stderr).lower()

    # The same check fails where the user's NumPy is outside kbert's range.
    _show_at(core, "numpy", "3.0.0")
    broken = subprocess.run([str(c) for c in [*pip, "check"]], cwd=work, env=env,
                            capture_output=True, text=True, timeout=300)
    assert broken.returncode == 1
    assert "kbert-keras" in broken.stdout and "numpy 3.0.0" in broken.stdout, broken.stdout
