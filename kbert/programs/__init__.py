"""The command-line programs, installed as console entry points (setup.py) and run from a
clone as `python tools/<name>.py` (thin wrappers of these modules): the same code either way.

    kbert-pretrain                  tools/pretrain.py                 kbert.programs.pretrain
    kbert-finetune                  tools/finetune.py                 kbert.programs.finetune
    kbert-predict                   tools/predict.py                  kbert.programs.predict
    kbert-export                    tools/export.py                   kbert.programs.export
    kbert-analyze                   tools/analyze.py                  kbert.programs.analyze
    kbert-convert                   tools/convert_checkpoint.py       ...convert_checkpoint
    kbert-build-vocab               tools/build_vocab.py              kbert.programs.build_vocab
    kbert-create-pretraining-data   tools/create_pretraining_data.py  ...create_pretraining_data

Each program defines its absl flags when imported (one program per process) and runs with
`run(main)`. The flagfiles of tools/flags/ are shipped in the package: `--flagfile=quickstart`
(a name, without .flags) reads the shipped `quickstart.flags`; a path is read as absl reads it.
Nothing in kbert imports this package.
"""

import os
import sys
from pathlib import Path

PROGRAMS = {  # the console entry point -> its module (setup.py's entry_points)
    "kbert-pretrain": "pretrain",
    "kbert-finetune": "finetune",
    "kbert-predict": "predict",
    "kbert-export": "export",
    "kbert-analyze": "analyze",
    "kbert-convert": "convert_checkpoint",
    "kbert-build-vocab": "build_vocab",
    "kbert-create-pretraining-data": "create_pretraining_data",
}

# A clone (or editable install, beside setup.py) reads tools/flags; a wheel carries
# kbert/programs/flags.
_CLONE = Path(__file__).resolve().parents[2]
_FLAGFILE_PATH = (
    *((_CLONE / "tools" / "flags",) if (_CLONE / "setup.py").exists() else ()),
    Path(__file__).resolve().parent / "flags",
)


def flagfiles():
    """{name: path} of the shipped flagfiles (`quickstart` -> .../quickstart.flags)."""
    files = {}
    for folder in reversed(_FLAGFILE_PATH):
        if folder.is_dir():
            files.update({path.stem: path for path in folder.glob("*.flags")})
    return files


def resolve_flagfiles(argv):
    """`argv` with each `--flagfile=NAME` (or `--flagfile NAME`) that names no file but a
    shipped flagfile (`quickstart`, `quickstart.flags`) replaced by that file's path. A name
    that is neither exits with a message listing the shipped ones."""
    shipped, out, argv = None, [], list(argv)
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--flagfile", "-flagfile") and i + 1 < len(argv):  # absl's two-word form
            arg, i = f"{arg}={argv[i + 1]}", i + 1
        prefix, _, value = arg.partition("=")
        if prefix in ("--flagfile", "-flagfile") and value and not os.path.exists(value) \
                and os.sep not in value and "/" not in value:
            shipped = flagfiles() if shipped is None else shipped
            name = value.removesuffix(".flags")
            if name not in shipped:
                sys.stderr.write(f"FATAL --flagfile={value}: no such file, nor a shipped "
                                 f"flagfile (those are: {', '.join(sorted(shipped))}).\n")
                sys.exit(1)
            arg = f"{prefix}={shipped[name]}"
        out.append(arg)
        i += 1
    return out


def run(main, doc, flags_parser=None):
    """absl's `app.run(main)` on the command line, with `doc` (the program's docstring and
    flags) as its --help text and the shipped flagfiles found by name."""
    from absl import app

    sys.argv = resolve_flagfiles(sys.argv)
    sys.modules["__main__"].__doc__ = doc  # absl's usage text (a console script has none)
    if flags_parser is None:
        app.run(main)
    else:
        app.run(main, flags_parser=flags_parser)
