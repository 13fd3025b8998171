"""Promises of README.md and docs/ that no other test checks.

- `--dry_run` (docs/pretraining.md: "checks the flags and prints the resolved config"): every
  tool whose flags are a config's fields (pretrain, finetune, predict, analyze, export) has
  it; it validates the config, prints it as JSON and runs nothing, and a bad flag is still an
  error.
- The private-Keras version guard (docs/keras-limits.md): every private API it lists is
  guarded where kbert touches it, the docs' table names each one, and the refusal names the
  API, the version and both ways out (the pinned version, KBERT_ALLOW_UNTESTED_KERAS=1).
"""

import dataclasses
import importlib
import json
import pathlib
import re

import pytest
from absl import app, flags

from kbert import _keras_private
from kbert.training import config_fields

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"

# program -> (module, config class, flags of a valid run given a folder)
PROGRAMS = {
    "pretrain": ("kbert.training.pretraining_config", "PretrainingConfig",
                 lambda d: [f"--model_dir={d}/run", "--train_steps=300", "--preset=bert_tiny"]),
    "finetune": ("kbert.training.finetuning_config", "FinetuningConfig",
                 lambda d: [f"--model_dir={d}/run", "--preset=bert_tiny",
                            f"--train_data={d}/train.csv", "--epochs=2"]),
    "predict": ("kbert.batch.prediction", "PredictionConfig",
                lambda d: ["--task=text-classification",
                           f"--model={FIXTURES / 'hf_tasks' / 'bert_seq_single'}",
                           f"--input={d}/train.csv", f"--output={d}/out.jsonl"]),
    "analyze": ("kbert.analysis.run", "AnalysisConfig",
                lambda d: ["--model=bert_tiny", "--text=A short text.",
                           f"--output_dir={d}/analysis"]),
    "export": ("kbert.programs.export_config", "ExportConfig",
               lambda d: ["--task=text-classification",
                          f"--model={FIXTURES / 'hf_tasks' / 'bert_seq_single'}",
                          f"--output={d}/export"]),
}


def _program(name):
    module, class_name, _ = PROGRAMS[name]
    config_class = getattr(importlib.import_module(module), class_name)
    values = flags.FlagValues()
    config_fields.define_program(config_class, values)
    return config_class, values


def test_every_config_program_of_tools_defines_dry_run():
    """The programs (kbert/programs/, which tools/*.py run) that take a config's fields as
    flags are the ones listed here, and each defines them (with --dry_run) through
    config_fields.define_program and runs through run_program, where --dry_run is handled."""
    folder = ROOT / "kbert" / "programs"
    programs = {path.stem for path in folder.glob("*.py")
                if "define_program(" in path.read_text(encoding="utf-8")
                or "define_flags()" in path.read_text(encoding="utf-8")}
    assert programs == set(PROGRAMS)
    for name in PROGRAMS:  # and hands its main to run_program, which handles --dry_run
        text = (folder / f"{name}.py").read_text(encoding="utf-8")
        assert "config_fields.run_program(" in text or "programs.run(analysis.main" in text, name
    assert "config_fields.run_program(AnalysisConfig" in (
        ROOT / "kbert" / "analysis" / "run.py").read_text(encoding="utf-8")
    for name in PROGRAMS:
        _, values = _program(name)
        assert "dry_run" in values and values["dry_run"].default is False


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_dry_run_prints_the_validated_config_and_runs_nothing(name, tmp_path, capsys):
    (tmp_path / "train.csv").write_text("sentence,label\nGood.,1\nBad.,0\n", encoding="utf-8")
    config_class, values = _program(name)
    values([name, *PROGRAMS[name][2](tmp_path), "--dry_run"])

    def run(config):
        raise AssertionError(f"--dry_run ran {name} with {config}")

    config_fields.run_program(config_class, run, [name], flag_values=values)
    printed = json.loads(capsys.readouterr().out)
    expected = dataclasses.asdict(config_fields.config_from_flags(config_class, values))
    assert printed == json.loads(json.dumps(expected))
    assert not any(tmp_path.glob("run*")) and not (tmp_path / "analysis").exists()
    assert not (tmp_path / "export").exists()
    # The printed config is the resolved one: a flag given is in it.
    given = {"pretrain": ("train_steps", 300), "finetune": ("epochs", 2),
             "predict": ("task", "text-classification"), "analyze": ("text", "A short text."),
             "export": ("task", "text-classification")}
    field, value = given[name]
    assert printed[field] == value


@pytest.mark.parametrize("name, bad, message", [
    ("pretrain", "--train_steps=250", "--train_steps=250 must be a multiple of "
                                       "--steps_per_loop=100"),
    ("finetune", "--layer_decay=2", "--layer_decay must be in (0, 1], got 2.0"),
    ("predict", "--rows_per_call=0", "--rows_per_call"),
    ("analyze", "--test_fraction=1.5", "--test_fraction=1.5 must be between 0 and 1"),
    ("export", "--quantize=float16", "--quantize=float16 is not for --format=saved_model"),
])
def test_dry_run_still_refuses_a_bad_flag_naming_it(name, bad, message, tmp_path, capsys):
    (tmp_path / "train.csv").write_text("sentence,label\nGood.,1\n", encoding="utf-8")
    config_class, values = _program(name)
    values([name, *PROGRAMS[name][2](tmp_path), bad, "--dry_run"])
    with pytest.raises(app.UsageError, match=re.escape(message)):
        config_fields.run_program(config_class, lambda config: None, [name], flag_values=values)
    assert capsys.readouterr().out == ""



def test_dry_run_refuses_a_flag_predict_does_not_define_without_runner(tmp_path, capsys):
    """predict hands the flags it does not define to Beam, with --runner only: a mistyped
    flag without --runner is an error, under --dry_run too."""
    config_class, values = _program("predict")
    rest = values(["predict", *PROGRAMS["predict"][2](tmp_path), "--bacth_size=8",
                   "--dry_run"], known_only=True)
    with pytest.raises(app.UsageError, match=re.escape("Unknown flags --bacth_size=8")):
        config_fields.run_program(config_class, lambda config: None, ["predict"],
                                  flag_values=values, fields={"beam_args": rest[1:]})
    assert capsys.readouterr().out == ""

# --- the private-Keras version guard (docs/keras-limits.md) ---

def test_every_private_api_is_guarded_where_kbert_touches_it():
    """Each entry of PRIVATE_APIS is guarded by name somewhere in kbert, and no guard names
    an API the list does not hold."""
    guarded = set()
    for path in (ROOT / "kbert").rglob("*.py"):
        guarded |= set(re.findall(r"guard\(\"(\w+)\"\)", path.read_text(encoding="utf-8")))
    assert guarded == set(_keras_private.PRIVATE_APIS)


def test_the_keras_limits_page_lists_every_guarded_api():
    page = (ROOT / "docs" / "keras-limits.md").read_text(encoding="utf-8")
    assert "KBERT_ALLOW_UNTESTED_KERAS=1" in page
    for name, api in _keras_private.PRIVATE_APIS.items():
        # Every private attribute the entry names (`_clip_gradients`, `_feedforward_*`, ...),
        # or, where it names none (TensorFlow's save_context), its last dotted name.
        private = [n.rstrip("_") for n in re.findall(r"(?<![\w])_[a-z]\w*", api.what)]
        names = private or [api.what.split()[0].split(".")[-1]]
        missing = [n for n in names if n not in page]
        assert not missing, f"{name}: {missing} not on docs/keras-limits.md"


@pytest.mark.parametrize("name", sorted(_keras_private.PRIVATE_APIS))
def test_the_refusal_names_the_api_the_version_and_both_ways_out(name, monkeypatch):
    api = _keras_private.PRIVATE_APIS[name]
    module = pytest.importorskip(api.package)
    monkeypatch.setattr(module, "__version__", "99.1.0")
    monkeypatch.delenv("KBERT_ALLOW_UNTESTED_KERAS", raising=False)
    with pytest.raises(_keras_private.UntestedVersionError) as refused:
        _keras_private.guard(name)
    message = str(refused.value)
    tested = " / ".join(v + "x" for v in _keras_private.TESTED[api.package])
    for part in (api.what, f"{api.package} 99.1.0", f"tested with {api.package} {tested}",
                 "Install the tested version", "KBERT_ALLOW_UNTESTED_KERAS=1"):
        assert part in message, (part, message)
    monkeypatch.setenv("KBERT_ALLOW_UNTESTED_KERAS", "1")
    _keras_private.guard(name)  # tries anyway


def test_the_tested_versions_are_the_ones_constraints_txt_pins():
    """The guard's TESTED prefixes, constraints.txt's pins and setup.py's lower bounds say
    the same versions."""
    setup = (ROOT / "setup.py").read_text(encoding="utf-8")
    constraints = (ROOT / "constraints.txt").read_text(encoding="utf-8")
    for package, prefixes in _keras_private.TESTED.items():
        requirement = package.replace("_", "-")
        pinned = re.search(rf"^{re.escape(requirement)}==(\S+)$", constraints, re.M)
        assert pinned, f"constraints.txt does not pin {requirement}"
        assert pinned.group(1).startswith(prefixes), (requirement, pinned.group(1), prefixes)
        lowest = re.search(rf"[\"']{re.escape(requirement)}(?:\[[\w,]+\])?>=([\w.]+)", setup)
        assert lowest, f"setup.py gives {requirement} no lower bound"
        assert any(prefix.rstrip(".") in lowest.group(1) for prefix in prefixes), (
            requirement, lowest.group(1), prefixes)
