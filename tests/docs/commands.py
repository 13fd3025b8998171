"""Checks the shell blocks' commands without running their long jobs.

Each `python tools/X.py ...` command, or the installed program's (`kbert-pretrain ...`; a
shipped flagfile by name), after any `VARIABLE=value`, is parsed as the program parses it:
the programs whose flags are a config's fields (pretrain, finetune, predict, analyze,
export) build and validate their config from the flags, in the stand-in folder, as
`--dry_run` does; the others have every flag (and every flag of a `--flagfile`) checked
against the flags the program defines, and a command word (tools/benchmark.py's) against its
commands. Any other command needs a `<!-- skip: ... -->` marker.
"""

import dataclasses
import os
import re
import shlex
from pathlib import Path

from kbert import programs

ROOT = Path(__file__).resolve().parents[2]
CONFIG_PROGRAMS = {
    "pretrain": ("kbert.training.pretraining_config", "PretrainingConfig"),
    "finetune": ("kbert.training.finetuning_config", "FinetuningConfig"),
    "predict": ("kbert.batch.prediction", "PredictionConfig"),
    "analyze": ("kbert.analysis.run", "AnalysisConfig"),
    "export": ("kbert.programs.export_config", "ExportConfig"),
}
DEFINED = re.compile(r"DEFINE_(\w+)\(\s*[\"'](\w+)[\"']")
ABSL = {"flagfile", "help", "helpfull", "helpshort"}
ENVIRONMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def commands(code):
    """The commands of a shell block: continuations joined, comments dropped."""
    text = code.replace("\\\n", " ")
    return [words for line in text.splitlines()
            if (words := shlex.split(line, comments=True))]


def check_block(code, folder):
    """Raises AssertionError naming the first command that would fail."""
    for words in commands(code):
        while words and ENVIRONMENT.match(words[0]):  # VARIABLE=value python tools/X.py
            words = words[1:]
        if words[:1] and words[0] in programs.PROGRAMS:  # kbert-pretrain ...
            program, args = programs.PROGRAMS[words[0]], words[1:]
        else:
            assert words[:1] == ["python"] and len(words) > 1 and words[1].startswith(
                "tools/"), (f"{' '.join(words)!r} is not a `python tools/X.py` command nor an "
                            "installed program's: run it in a test or mark the block "
                            "<!-- skip: REASON -->")
            program, args = Path(words[1]).stem, words[2:]
        try:
            args = programs.resolve_flagfiles(args)  # --flagfile=quickstart: the shipped one
        except SystemExit as error:
            raise AssertionError(f"{' '.join(words)}: no such flagfile") from error
        if program in CONFIG_PROGRAMS:
            check_config_program(program, args, folder)
        else:
            source = ROOT / "kbert" / "programs" / f"{program}.py"  # the program's flags
            if program == "benchmark":  # tools/benchmark.py runs benchmarks/cli.py
                source = ROOT / "benchmarks" / "cli.py"
            check_flags(source if source.exists() else ROOT / "tools" / f"{program}.py", args,
                        folder)


def check_config_program(program, args, folder):
    import importlib

    from absl import flags

    from kbert.training import config_fields

    module, name = CONFIG_PROGRAMS[program]
    config_class = getattr(importlib.import_module(module), name)
    values = flags.FlagValues()
    config_fields.define_program(config_class, values)
    before = os.getcwd()
    os.chdir(folder)
    try:
        # predict hands the flags it does not know to Beam (with --runner), as the tool does.
        rest = values([program] + args, known_only=program == "predict")[1:]
        config = config_fields.config_from_flags(config_class, values)
        if rest:
            config = dataclasses.replace(config, beam_args=rest)
        config.validate()
    except Exception as error:
        raise AssertionError(f"tools/{program}.py {' '.join(args)}: {error}") from error
    finally:
        os.chdir(before)


# Programs that hand the flags they do not define to Apache Beam when given --runner.
BEAM_PROGRAMS = {"create_pretraining_data"}


def check_flags(tool, args, folder):
    source = tool.read_text(encoding="utf-8")
    defined = {name: kind for kind, name in DEFINED.findall(source)}
    if tool.stem in BEAM_PROGRAMS and any(a.startswith("--runner=") for a in args):
        # What Beam does with its options is checked by Beam when the job starts.
        args = [a for a in args if not a.startswith("--")
                or a[2:].partition("=")[0] in defined or a.startswith("--flagfile")]
    for arg in args:
        if not arg.startswith("--"):
            assert f'"{arg}"' in source, f"{tool.name}: no command {arg!r}"
            continue
        name, has_value, value = arg[2:].partition("=")
        if name == "flagfile":
            path = Path(folder) / value
            assert path.is_file(), f"{tool.name}: no flagfile {value}"
            flagfile_args = [line.strip() for line in path.read_text().splitlines()
                             if line.strip().startswith("--")]
            check_flags(tool, flagfile_args, folder)
            continue
        bare = name[2:] if name.startswith("no") and not has_value else name
        assert name in defined or name in ABSL or defined.get(bare) == "bool", (
            f"{tool.name} has no flag --{name}")
