"""tools/pretrain.py and kbert.training.run_pretraining: flags, resume, faults, learning."""

import functools
import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tests.helpers import run_program_here
from tests.tools.killing import run_killed_after_checkpoint

ROOT = Path(__file__).resolve().parents[2]
PRETRAIN = str(ROOT / "tools" / "pretrain.py")
BUILD_VOCAB = str(ROOT / "tools" / "build_vocab.py")
ALBERT_SPIECE = ROOT / "tests" / "fixtures" / "hf_tiny" / "albert" / "spiece.model"
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")


@pytest.fixture(scope="module")
def vocab_file(stdlib_vocab_file):
    return stdlib_vocab_file  # tests/conftest.py: learned once per run


def small_run_flags(model_dir, vocab, steps=30, loop=10, **extra):
    """A few steps of BERT-Tiny. Without XLA: its compile costs more than such a run's steps
    (30 steps, measured on the 2-core machine with the suite's other worker busy: 122 s with
    XLA, 65 s without); the runs that must learn turn it on, as users run."""
    flags = {
        "model_dir": model_dir, "vocab_file": vocab, "preset": "bert_tiny", "sequence_length": 32,
        "max_predictions": 5, "global_batch_size": 8, "train_steps": steps,
        "steps_per_loop": loop, "learning_rate": 1e-3, "warmup_steps": 2, "verbose": 2,
        "seed": 7, "jit_compile": "false",
    }
    flags.update(extra)
    return [f"--{k}={v}" for k, v in flags.items()]


def run_here(args):
    """tools/pretrain.py's `main` in this process (`tests.helpers.run_program_here`): a
    `CompletedProcess` of what the run printed (returncode 0). Where the tool would exit with
    a message, the `SystemExit` or absl `UsageError` that `app.run` prints propagates."""
    from kbert.training import run_pretraining
    from kbert.training.pretraining_config import PretrainingConfig

    argv = ["pretrain.py", *(str(arg) for arg in args)]
    out = run_program_here(PretrainingConfig, run_pretraining, argv[0], argv[1:])
    return subprocess.CompletedProcess(argv, 0, out, "")


def final_weights(model_dir):
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints")))
    names = [n for n in reader.get_variable_to_shape_map() if n.startswith("model/")]
    return {n: reader.get_tensor(n) for n in names}


def parse_flags(args):
    """The `PretrainingConfig` that tools/pretrain.py builds from `args`, in this process."""
    from absl import flags

    from kbert.training import config_fields
    from kbert.training.pretraining_config import PretrainingConfig

    flag_values = flags.FlagValues()
    config_fields.define_flags(PretrainingConfig, flag_values)
    flag_values(["pretrain.py", *args])
    return config_fields.config_from_flags(PretrainingConfig, flag_values)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--preset=bert_huge"], "--preset: Unknown preset 'bert_huge'. Available: albert_base"),
        (["--preset=distil_bert_base", "--objective=mlm_nsp"],
         "--objective=mlm_nsp: distil_bert_base (distil_bert) has no sentence-level head; use "
         "--objective=mlm."),
        (["--objective=rtd"], "--objective=rtd (replaced-token detection (ELECTRA; DeBERTa-v3 "
                              "with GDES)) needs a preset of the electra or deberta_v3 family "
                              "(deberta_v3_base, deberta_v3_large, deberta_v3_small, "
                              "deberta_v3_xsmall, electra_base, electra_large, electra_small); "
                              "--preset=bert_tiny is bert."),
        (["--model=electra_small", "--objective=mlm_nsp"],
         "electra_small (electra) has no sentence-level head; use --objective=rtd (or mlm)."),
        (["--model=electra_small", "--objective=rtd", "--generator_hidden_fraction=1.5"],
         "--generator_hidden_fraction must be in (0, 1], got 1.5."),
        (["--objective=distill"], "--objective=distill and --teacher go together"),
        (["--objective=distill", "--teacher=/no/teacher"],
         "--teacher='/no/teacher': not a kbert run (model_dir with config.json and "
         "checkpoints/), a preset"),
        (["--objective=distill", "--teacher=bert_tiny", "--temperature=0"],
         "--temperature must be > 0, got 0.0."),
        (["--input=/no/such/*.txt"], "--input: No input file matches '/no/such/*.txt'"),
        (["--sequence_length=1024"], "--sequence_length=1024 is longer than the model's "
                                     "max_sequence_length=512"),
        (["--train_steps=150", "--steps_per_loop=100"], "--train_steps=150 must be a multiple"),
        (["--train_steps=100", "--epochs=2"], "Give exactly one of --train_steps and --epochs."),
        (["--vocab=/no/vocab.txt"], "--vocab_file='/no/vocab.txt' does not exist"),
        (["--train_steps=100", "--steps_per_loop=50", "--warmup_steps=200"],
         "--warmup_steps=200 must be in [0, --train_steps=100]"),
        (["--config_override=num_layers=0"],
         "--config_override: `num_layers` must be an integer > 0, got 0."),
        (["--config_override=num_layers"], "--config_override: 'num_layers' is not KEY=VALUE."),
        (["--student_layers=0,x"], "--student_layers: '0,x': expected integers"),
        (["--global_batch_size=0"], "--global_batch_size must be an integer >= 1, got 0."),
        (["--rtd_loss_weight=-1"], "--rtd_loss_weight must be a number >= 0, got -1.0."),
        (["--tokenizer_type=wordpiece", f"--vocab_file={ALBERT_SPIECE}"],
         f"--tokenizer_type=wordpiece does not read --vocab_file='{ALBERT_SPIECE}': a file "
         "ending in .model is sentencepiece; leave --tokenizer_type=auto"),
        (["--tokenizer_type=bpe", "--objective=mlm_nsp"],
         "--objective=mlm_nsp trains a sentence task on BERT's pairs"),
        (["--objective=distill", "--teacher=bert_tiny", "--tokenizer_type=sentencepiece"],
         "--teacher with a sentencepiece vocabulary (--tokenizer_type=sentencepiece, "
         "--vocab_file=None): a distilled student speaks its teacher's wordpiece vocabulary"),
        (["--objective=distill", "--preset=roberta_base", "--teacher=roberta_base",
          "--tokenizer_type=wordpiece"],
         "--teacher with a wordpiece vocabulary (--tokenizer_type=wordpiece, "
         "--vocab_file=None): a distilled student speaks its teacher's bpe vocabulary"),
    ],
)
def test_bad_flags_fail_fast(tmp_path, args, message):
    from kbert.training.config_fields import ConfigError

    with pytest.raises(ConfigError) as error:
        parse_flags([f"--model_dir={tmp_path}/run", *args]).validate()
    assert message in str(error.value)
    assert not (tmp_path / "run").exists()  # nothing was started


def test_the_distillation_recipe_is_a_flag(tmp_path):
    """--distill_recipe and --tiny_bert_stage reach the config; a bad recipe is refused,
    naming the allowed values, by the flag parser and by the config's own check."""
    from absl import flags

    from kbert.training.pretraining_config import PretrainingConfig
    from kbert.training.config_fields import ConfigError

    config = parse_flags([f"--model_dir={tmp_path}", "--objective=distill", "--teacher=bert_tiny",
                          "--distill_recipe=tiny_bert", "--tiny_bert_stage=intermediate"])
    assert (config.distill_recipe, config.tiny_bert_stage) == ("tiny_bert", "intermediate")
    config.validate()
    assert parse_flags([f"--model_dir={tmp_path}"]).distill_recipe == "distil_bert"
    assert parse_flags([f"--model_dir={tmp_path}"]).tiny_bert_stage == "both"
    with pytest.raises(flags.IllegalFlagValueError, match=r"distil_bert\|tiny_bert"):
        parse_flags([f"--model_dir={tmp_path}", "--distill_recipe=mini_lm"])
    with pytest.raises(ConfigError, match="distil_bert, tiny_bert"):
        PretrainingConfig(model_dir=str(tmp_path), distill_recipe="mini_lm").validate()
    with pytest.raises(ConfigError, match="intermediate, prediction, both"):
        PretrainingConfig(model_dir=str(tmp_path), tiny_bert_stage="last").validate()


def test_lowercase_defaults_to_the_presets_tokenizer(tmp_path):
    """--lowercase unset: the preset's tokenizer says (RoBERTa and DeBERTa-v3 are cased, BERT
    uncased); set: the flag wins."""
    def lowercase(*extra):
        return parse_flags([f"--model_dir={tmp_path}", *extra]).resolved_lowercase

    assert parse_flags([f"--model_dir={tmp_path}"]).lowercase is None
    assert lowercase() is True  # bert_base
    assert lowercase("--preset=roberta_base") is False
    assert lowercase("--preset=deberta_v3_small") is False
    assert lowercase("--preset=roberta_base", "--lowercase") is True
    assert lowercase("--nolowercase") is False


def test_a_resumed_or_distilled_run_keeps_the_casing_it_tokenizes_with(tmp_path):
    """A run whose config.json records a casing resumes with it (runs made when --lowercase
    defaulted to true for every preset stay lower-cased); a student takes its teacher's; a
    --lowercase that contradicts either is refused."""
    import json

    from kbert.training.distillation import TeacherSource
    from kbert.training.pretraining import _resolve_lowercase
    from kbert.training.config_fields import ConfigError

    def config(*extra):
        return parse_flags([f"--model_dir={tmp_path}", "--preset=roberta_base", *extra])

    assert _resolve_lowercase(config(), str(tmp_path), None).resolved_lowercase is False
    (tmp_path / "config.json").write_text(json.dumps({"lowercase": True}))
    assert _resolve_lowercase(config(), str(tmp_path), None).lowercase is True
    assert _resolve_lowercase(config("--lowercase"), str(tmp_path), None).lowercase is True
    with pytest.raises(ConfigError, match=r"--lowercase=False: .*config.json records "
                                          r"lowercase=True"):
        _resolve_lowercase(config("--nolowercase"), str(tmp_path), None)
    teacher = TeacherSource("preset bert_tiny", ["[PAD]"], True, None)
    student_dir = tmp_path / "student"
    assert _resolve_lowercase(config(), str(student_dir), teacher).lowercase is True
    with pytest.raises(ConfigError, match=r"--lowercase=False: the teacher \(preset "
                                          r"bert_tiny\) has lowercase=True"):
        _resolve_lowercase(config("--nolowercase"), str(student_dir), teacher)


def test_flags_are_the_config_fields(tmp_path):
    """Every field has its flag; old names still work; the flag defaults are the fields'."""
    from kbert.training.pretraining_config import PretrainingConfig

    config = parse_flags([f"--model_dir={tmp_path}", "--vocab=v.txt", "--vocab_size=300",
                          "--model=bert_base", "--config_override=dropout=0.0",
                          "--student_layers=0,3", "--clipnorm=0"])
    assert (config.vocab_file, config.learned_vocabulary_size, config.preset) == (
        "v.txt", 300, "bert_base")
    assert config.config_overrides == {"dropout": 0.0} and config.student_layers == [0, 3]
    assert config.clipnorm is None
    assert parse_flags([f"--model_dir={tmp_path}"]) == PretrainingConfig(model_dir=str(tmp_path))


def test_the_tokenizer_type_follows_the_vocab_file_then_the_preset(tmp_path):
    def resolved(*args):
        return parse_flags([f"--model_dir={tmp_path}", *args]).resolved_tokenizer_type

    assert resolved() == "wordpiece"  # bert_tiny
    assert resolved("--preset=albert_base") == "sentencepiece"
    assert resolved("--preset=albert_base", "--vocab_file=vocab.txt") == "wordpiece"
    assert resolved("--vocab_file=runs/spiece.model") == "sentencepiece"
    assert resolved("--preset=albert_base", "--tokenizer_type=wordpiece") == "wordpiece"
    assert resolved("--preset=albert_base", "--objective=distill",
                    "--teacher=bert_tiny") == "wordpiece"  # the teacher's
    assert resolved("--preset=roberta_base", "--objective=distill",
                    "--teacher=roberta_base") == "bpe"  # any kind of teacher
    assert resolved("--preset=albert_base", "--objective=distill",
                    "--teacher=albert_base") == "sentencepiece"


@pytest.fixture(scope="module")
def bad_flag_and_help(tmp_path_factory):
    """tools/pretrain.py with a bad flag, then with --help: both commands in one process, each
    as `python tools/pretrain.py FLAGS` runs it (tests/tools/one_process.py: TensorFlow
    imported once): (the bad flag's --model_dir, its CompletedProcess, --help's)."""
    from tests.tools.one_process import run_commands

    model_dir = tmp_path_factory.mktemp("bad_flag") / "run"
    bad, help_ = run_commands(PRETRAIN, [[f"--model_dir={model_dir}", "--preset=bert_huge"],
                                         ["--help"]], timeout=120, env=ENV, cwd=ROOT)
    return model_dir, bad, help_


@pytest.mark.slow
def test_the_tool_reports_a_bad_flag_without_a_traceback(bad_flag_and_help):
    model_dir, result, _ = bad_flag_and_help
    assert result.returncode != 0
    assert "--preset: Unknown preset 'bert_huge'" in result.stderr
    assert "Traceback" not in result.stderr and not model_dir.exists()


@pytest.mark.slow
def test_help_groups_the_flags(bad_flag_and_help):
    result = bad_flag_and_help[2]
    assert "Traceback" not in result.stderr, result.stderr[-2000:]  # absl's --help exits 1
    groups = [line for line in result.stdout.splitlines() if line in (
        "Model:", "Data:", "Schedule:", "Hardware:", "Output:")]
    assert groups == ["Model:", "Data:", "Schedule:", "Hardware:", "Output:"]
    assert "--masking: <token|word|ngram>" in result.stdout
    assert "--preset: kbert preset to pretrain: albert_base" in result.stdout


TWO_CPUS = """
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from kbert.training import PretrainingConfig, run_pretraining
"""


def run_on_two_cpus(body, timeout=300):
    return subprocess.run([sys.executable, "-c", TWO_CPUS + textwrap.dedent(body)],
                          capture_output=True, text=True, timeout=timeout, env=ENV, cwd=ROOT)


@pytest.fixture(scope="module")
def two_replica_runs(tmp_path_factory, vocab_file):
    """The two tests below in ONE process with two logical CPUs (TensorFlow's start-up paid
    once): the settings two replicas cannot run, each printed as an ERROR line, then the same
    run under "mirrored" and "default" into folder/mirrored and folder/default. Returns
    (folder, the process's CompletedProcess)."""
    folder = tmp_path_factory.mktemp("two_replicas")
    flags = dict(sequence_length=32, max_predictions=5, global_batch_size=8, train_steps=20,
                 steps_per_loop=10, learning_rate=1e-3, warmup_steps=2, clipnorm=0.05,
                 verbose=2, seed=7, jit_compile=False)
    result = run_on_two_cpus(f"""
        for extra in [dict(global_batch_size=3), dict(gradient_accumulation_steps=2),
                      dict(jit_compile=True)]:
            args = dict(model_dir={str(folder / "refused")!r}, vocab_file={vocab_file!r},
                        strategy="mirrored", global_batch_size=4, train_steps=10,
                        steps_per_loop=10, jit_compile=False)
            try:
                run_pretraining(PretrainingConfig(**{{**args, **extra}}))
            except ValueError as e:
                print("ERROR:", e)
        for strategy in ("mirrored", "default"):
            run_pretraining(PretrainingConfig(model_dir={str(folder)!r} + "/" + strategy,
                                              vocab_file={vocab_file!r}, strategy=strategy,
                                              **{flags!r}))
    """, timeout=420)
    return folder, result


@pytest.mark.slow
def test_what_two_replicas_cannot_run_fails_fast(two_replica_runs):
    result = two_replica_runs[1]
    errors = [line for line in result.stdout.splitlines() if line.startswith("ERROR: ")]
    assert len(errors) == 3, result.stderr[-2000:]
    assert ("--global_batch_size=3 is not divisible by the 2 replicas of "
            "--strategy=mirrored") in errors[0]
    assert "--gradient_accumulation_steps=2 cannot run with the 2 replicas" in errors[1]
    assert "keras-team/keras#20582" in errors[1]
    assert "--strategy=mirrored over CPU devices needs --nojit_compile" in errors[2]


@pytest.mark.slow
def test_mirrored_two_replicas_match_the_default_strategy(two_replica_runs):
    """Same global batch and seed: 2 Mirrored replicas reach the default strategy's weights.

    Dropout stays on (replicas mask their rows of the global batch as one device would) and
    global-norm clipping binds (0.05). Tolerance 1e-5; seen: 1.2e-7 (float32 summation order).
    """
    folder, result = two_replica_runs
    assert result.returncode == 0, result.stderr[-3000:]
    a, b = final_weights(str(folder / "mirrored")), final_weights(str(folder / "default"))
    assert a.keys() == b.keys() and len(a) > 20
    for name in a:
        np.testing.assert_allclose(a[name], b[name], atol=1e-5, err_msg=name)
    # The runs did train: the weights moved from their initial values.
    first = tf.train.load_checkpoint(str(folder / "default" / "checkpoints" / "ckpt-10"))
    moved = [name for name in a if not np.allclose(first.get_tensor(name), a[name])]
    assert len(moved) > 20


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow
def test_two_workers_on_localhost_agree(tmp_path, vocab_file):
    """MultiWorkerMirrored, two worker processes (TF_CONFIG): both finish with equal weights."""
    model_dir = str(tmp_path / "run")
    cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
    args = small_run_flags(model_dir, vocab_file, steps=20, strategy="multi_worker",
                           jit_compile="false", export_dir=f"{model_dir}/export")
    workers = []
    for index in range(2):
        env = dict(ENV, TF_CONFIG=json.dumps({"cluster": cluster,
                                              "task": {"type": "worker", "index": index}}))
        log = open(tmp_path / f"worker{index}.log", "w")
        workers.append(subprocess.Popen([sys.executable, PRETRAIN, *args], stdout=log,
                                        stderr=subprocess.STDOUT, env=env, cwd=ROOT))
    try:
        codes = [worker.wait(timeout=400) for worker in workers]
    finally:
        for worker in workers:
            worker.kill()
    logs = [(tmp_path / f"worker{index}.log").read_text() for index in range(2)]
    assert codes == [0, 0], logs[0][-3000:] + logs[1][-3000:]
    for log in logs:
        assert "Final (20 steps)" in log
    # The chief (worker 0) writes model_dir and export_dir; worker 1 writes under workers/.
    worker_dir = os.path.join(model_dir, "workers", "worker_1")
    assert os.path.exists(os.path.join(model_dir, "export", "saved_model.pb"))
    assert os.path.exists(os.path.join(worker_dir, "export", "saved_model.pb"))
    chief, other = final_weights(model_dir), final_weights(worker_dir)
    assert chief.keys() == other.keys() and len(chief) > 20
    for name in chief:
        np.testing.assert_array_equal(chief[name], other[name], err_msg=name)


@pytest.mark.slow
def test_kill_and_resume_matches_an_uninterrupted_run(tmp_path, vocab_file):
    """With gradient accumulation 4 the checkpoint at step 10 falls inside an accumulation
    cycle, the harder case (without accumulation the same restore path runs). Then the last
    checkpoint of the whole run is truncated: a run again falls back to the one before and
    ends with the same weights."""
    flags = dict(gradient_accumulation_steps=4)
    whole = str(tmp_path / "whole")
    result = run_here(small_run_flags(whole, vocab_file, **flags))
    assert result.returncode == 0, result.stderr[-3000:]

    broken = str(tmp_path / "broken")
    run_killed_after_checkpoint(PRETRAIN, small_run_flags(broken, vocab_file, **flags), 10,
                                ENV, ROOT)  # kill -9 in the middle of the run
    assert not os.path.exists(os.path.join(broken, "checkpoints", "ckpt-30.index"))
    resumed = run_here(small_run_flags(broken, vocab_file, **flags))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Resuming from" in resumed.stdout

    a, b = final_weights(whole), final_weights(broken)
    assert a.keys() == b.keys() and len(a) > 20
    for name in a:
        np.testing.assert_allclose(a[name], b[name], atol=1e-5, err_msg=name)

    data = os.path.join(whole, "checkpoints", "ckpt-30.data-00000-of-00001")
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 2)
    result = run_here(small_run_flags(whole, vocab_file, **flags))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ckpt-30 is unreadable; falling back to the previous one" in result.stdout
    assert "Resuming from" in result.stdout and "ckpt-20 (step 20)" in result.stdout
    again = final_weights(whole)
    for name in a:
        np.testing.assert_allclose(again[name], a[name], atol=1e-5, err_msg=name)


@pytest.mark.slow
def test_epochs_count_the_passes_over_a_text_corpus(tmp_path, vocab_file):
    from kbert.data import corpora, pretraining_dataset
    from kbert.tokenizers import WordPieceTokenizer

    sentences = [s for document in corpora.stdlib_docstrings().take(40).as_numpy_iterator()
                 for s in document[:6]]
    corpus = tmp_path / "corpus.txt"  # BERT format: a sentence per line, blank between docs
    corpus.write_text("\n\n".join("\n".join(s.decode() for s in sentences[i:i + 6])
                                  for i in range(0, len(sentences), 6)) + "\n")
    batches = sum(1 for _ in pretraining_dataset(
        corpora.text_files([str(corpus)]), WordPieceTokenizer(vocab_file), sequence_length=32,
        max_predictions=5, batch_size=8, seed=7))
    assert batches >= 4
    model_dir = str(tmp_path / "run")
    flags = small_run_flags(model_dir, vocab_file, loop=2, input=str(corpus), epochs=2)
    result = run_here([f for f in flags if not f.startswith("--train_steps")])
    assert result.returncode == 0, result.stderr[-3000:]
    steps = 2 * batches - (2 * batches) % 2
    assert f"{batches} batches per epoch: {steps} steps in all." in result.stdout
    assert f"Final ({steps} steps)" in result.stdout
    assert tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints")).endswith(
        f"ckpt-{steps}")


@pytest.mark.slow
def test_nan_loss_stops_with_a_clear_error(tmp_path, vocab_file):
    """The tool's main stops with a message alone (a SystemExit of a string, which the
    interpreter prints without a traceback, exit status 1)."""
    model_dir = str(tmp_path / "run")
    with pytest.raises(SystemExit) as stop:
        run_here(small_run_flags(model_dir, vocab_file, steps=200, loop=10, learning_rate=1e30,
                                 clipnorm=0, warmup_steps=0, weight_decay=0))
    assert isinstance(stop.value.code, str), stop.value.code
    assert stop.value.code.startswith("Error: The loss became nan"), stop.value.code
    assert "last good checkpoint" in stop.value.code
    # No checkpoint was written from the NaN loop on.
    names = os.listdir(os.path.join(model_dir, "checkpoints")) if os.path.exists(
        os.path.join(model_dir, "checkpoints")) else []
    steps = sorted(int(n.split("-")[1].split(".")[0]) for n in names if n.endswith(".index"))
    assert not steps or steps[-1] < 200


# One MLM run serves two tests: it must learn, and it is the teacher a student distils.
TEACHER = dict(sequence_length=64, max_predictions=10, global_batch_size=32, verbose=2, seed=1,
               learning_rate=1e-3, warmup_steps=20)


@pytest.fixture(scope="module")
def mlm_teacher(tmp_path_factory, vocab_file):
    """A 400-step BERT-Tiny MLM run on the stdlib corpus: (model_dir, final logs)."""
    from kbert.training import PretrainingConfig, run_pretraining

    model_dir = str(tmp_path_factory.mktemp("teacher") / "run")
    logs = run_pretraining(PretrainingConfig(model_dir=model_dir, vocab_file=vocab_file,
                                             objective="mlm", train_steps=400,
                                             steps_per_loop=100, **TEACHER))
    return model_dir, logs


@pytest.mark.slow
def test_it_learns(mlm_teacher, vocab_file):
    """A short MLM run on the stdlib corpus beats predicting the most frequent token."""
    _, logs = mlm_teacher
    baseline = _most_frequent_token_accuracy(vocab_file, 64, 10)
    # Seen here: 0.098 (mean over the last 100 steps) against a baseline of 0.048.
    assert logs["mlm_accuracy"] > 1.5 * baseline, (logs, baseline)


# The others are finetune.py's: one task (--task=) or several (--multitask=).
PRETRAIN_FLAGFILES = sorted(p for p in (ROOT / "tools" / "flags").glob("*.flags")
                            if "--task=" not in p.read_text()
                            and "--multitask=" not in p.read_text())


@pytest.mark.parametrize("flagfile", PRETRAIN_FLAGFILES, ids=lambda p: p.name)
def test_flagfiles_are_valid(flagfile, tmp_path):
    args = [f"--flagfile={flagfile}", f"--model_dir={tmp_path}/run"]
    if "--vocab" in flagfile.read_text():  # phase 2 reads phase 1's vocab: stand in for it
        vocab = tmp_path / "vocab.txt"
        vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n")
        args.append(f"--vocab_file={vocab}")
    parse_flags(args).validate()



@pytest.mark.slow
def test_electra_trains_and_exports_the_discriminator(tmp_path, vocab_file):
    """--model=electra_small --objective=rtd through the tool; the SavedModel is the
    discriminator of the last checkpoint."""
    import keras

    from kbert import presets
    from kbert.models import ElectraPretrainer

    model_dir, export_dir = tmp_path / "run", tmp_path / "export"
    overrides = ["--config_override=num_layers=2", "--config_override=max_sequence_length=32"]
    result = run_here(small_run_flags(model_dir, vocab_file, steps=20, model="electra_small",
                                      objective="rtd", export_dir=export_dir) + overrides)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rtd_accuracy" in result.stdout and "Exported the discriminator" in result.stdout

    vocabulary_size = sum(1 for _ in open(vocab_file, encoding="utf-8"))
    backbone = presets.load("electra_small", head=None, weights=None, num_layers=2,
                            max_sequence_length=32, vocabulary_size=vocabulary_size)
    model = ElectraPretrainer(backbone, name="electra_small")
    path = tf.train.latest_checkpoint(str(model_dir / "checkpoints"))
    tf.train.Checkpoint(model=list(model.variables)).restore(path).expect_partial()
    ids = np.array([[2, 40, 41, 42, 3, 0, 0, 0]], "int32")
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
              "padding_mask": (ids > 0).astype("int32") | (np.arange(8) == 0)}
    expected = keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    served = tf.saved_model.load(str(export_dir)).signatures["serving_ids"](
        **{k: tf.constant(v) for k, v in inputs.items()})
    np.testing.assert_allclose(served["sequence_output"].numpy(), expected, atol=1e-5)
    assert json.loads((export_dir / "export.json").read_text())["task"] == "feature-extraction"


@pytest.mark.slow
def test_a_distilled_student_beats_one_trained_from_scratch(tmp_path, vocab_file, mlm_teacher):
    """A 1-layer DistilBERT student distilled from the BERT-Tiny MLM teacher
    (--objective=distill --teacher=<its model_dir>, initialised from its layers) beats the
    same student trained from scratch for the same steps on the same batches."""
    from kbert.training import PretrainingConfig, run_pretraining
    from kbert.training.pretraining import ConfigError

    common = TEACHER
    teacher_dir, _ = mlm_teacher
    student = {"num_layers": 1, "hidden_size": 128, "num_heads": 2, "intermediate_size": 512}
    runs = {}
    for name, extra in (("distill", dict(objective="distill", teacher=teacher_dir)),
                        ("scratch", dict(objective="mlm", vocab_file=vocab_file))):
        runs[name] = run_pretraining(PretrainingConfig(
            model_dir=str(tmp_path / name), preset="distil_bert_base", config_overrides=student,
            train_steps=60, steps_per_loop=30, **common, **extra))
    # Seen: 0.104 distilled, 0.060 from scratch (teacher 0.103); 100 steps: 0.099, 0.051.
    assert runs["distill"]["mlm_accuracy"] > 1.3 * runs["scratch"]["mlm_accuracy"], runs
    assert np.isfinite(runs["distill"]["kl_loss"])
    # The student speaks the teacher's vocabulary: another one is refused.
    other = tmp_path / "other_vocab.txt"
    other.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n")
    with pytest.raises(ConfigError, match="is not the vocabulary of the teacher"):
        run_pretraining(PretrainingConfig(
            model_dir=str(tmp_path / "bad"), preset="distil_bert_base", vocab_file=str(other),
            config_overrides=student, objective="distill", teacher=teacher_dir,
            train_steps=20, steps_per_loop=10, **common))


@pytest.mark.slow
def test_a_tiny_bert_student_beats_one_trained_from_scratch(tmp_path, vocab_file, mlm_teacher):
    """A 2-layer student half as wide as the BERT-Tiny MLM teacher, distilled with
    --distill_recipe=tiny_bert (random start, learned 64 -> 128 projections, both stages)
    beats the same student trained from scratch for the same steps on the same batches."""
    from kbert.training import PretrainingConfig, run_pretraining

    teacher_dir, _ = mlm_teacher
    student = {"num_layers": 2, "hidden_size": 64, "num_heads": 2, "intermediate_size": 256}
    runs = {}
    for name, extra in (("tiny_bert", dict(objective="distill", teacher=teacher_dir,
                                           distill_recipe="tiny_bert", temperature=1.0)),
                        ("scratch", dict(objective="mlm", vocab_file=vocab_file))):
        runs[name] = run_pretraining(PretrainingConfig(
            model_dir=str(tmp_path / name), preset="bert_tiny", config_overrides=student,
            train_steps=200, steps_per_loop=100, **TEACHER, **extra))
    # Seen: 0.0584 distilled (MLM loss 5.81), 0.0502 from scratch (5.91), which is still
    # at the most frequent tokens; a 1-layer student reached 0.051 both ways in 100 steps.
    assert runs["tiny_bert"]["mlm_accuracy"] > 1.1 * runs["scratch"]["mlm_accuracy"], runs
    assert runs["tiny_bert"]["mlm_loss"] < runs["scratch"]["mlm_loss"], runs
    for term in ("embedding_loss", "attention_loss", "hidden_loss", "prediction_loss"):
        assert np.isfinite(runs["tiny_bert"][term]) and runs["tiny_bert"][term] > 0, runs


def tensorboard_scalars(folder):
    """tag -> [(step, value)] of every scalar in the event files under `folder`."""
    scalars = {}
    for path in sorted(Path(folder).rglob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name != "scalars" and not value.HasField(
                        "simple_value"):
                    continue
                number = (value.simple_value if value.HasField("simple_value")
                          else float(tf.make_ndarray(value.tensor)))
                scalars.setdefault(value.tag, []).append((event.step, number))
    return scalars


@pytest.mark.slow
def test_tensorboard_holds_the_scalars_the_readme_promises(tmp_path, vocab_file):
    """docs/pretraining.md ("Progress and logs"): the loss, the MLM and NSP accuracy,
    sequences_per_second and learning_rate go to TensorBoard, once per loop, with the values
    the run reports."""
    model_dir = tmp_path / "run"
    result = run_here(small_run_flags(str(model_dir), vocab_file, steps=6, loop=2))
    assert result.returncode == 0, result.stderr[-3000:]
    scalars = tensorboard_scalars(model_dir / "logs" / "train")
    for name in ("loss", "mlm_accuracy", "nsp_accuracy", "sequences_per_second",
                 "learning_rate"):
        values = scalars.get(f"epoch_{name}")
        assert values is not None, (name, sorted(scalars))
        assert [step for step, _ in values] == [0, 1, 2], (name, values)
        assert all(np.isfinite(v) for _, v in values), (name, values)
    assert all(v > 0 for _, v in scalars["epoch_sequences_per_second"])
    # warm-up over 2 steps to 1e-3, then linear decay to 0 at step 6: the rate after each loop
    np.testing.assert_allclose([v for _, v in scalars["epoch_learning_rate"]],
                               [1e-3, 5e-4, 0.0], atol=1e-7)
    final = dict(part.rsplit(" ", 1) for part in
                 result.stdout.split("Final (6 steps): ")[1].splitlines()[0].split(", "))
    assert {"mlm_accuracy", "nsp_accuracy"} <= set(final), final
    for name, printed in final.items():
        assert scalars[f"epoch_{name}"][-1][1] == pytest.approx(float(printed), abs=1e-4), name


@functools.cache
def _most_frequent_token_accuracy(vocab_file, sequence_length, max_predictions):
    """The MLM accuracy of always predicting the most frequent masked token (stdlib corpus;
    1,280 sequences of batches 32 as the runs' first; computed once per file)."""
    from kbert.data import corpora, pretraining_dataset
    from kbert.tokenizers import WordPieceTokenizer

    data = pretraining_dataset(corpora.stdlib_docstrings(), WordPieceTokenizer(vocab_file),
                               sequence_length=sequence_length, max_predictions=max_predictions,
                               batch_size=32, seed=1)
    labels = np.concatenate([l["mask_ids"][l["mask_weights"] > 0]
                             for _, l in data.take(40).as_numpy_iterator()])
    return np.bincount(labels).max() / len(labels)


@pytest.mark.slow
def test_mobile_bert_learns_through_the_tool(tmp_path, vocab_file):
    """--model=mobile_bert (MLM + NSP) through tools/pretrain.py: a 2-layer MobileBERT at a
    quarter of the release's widths beats predicting the most frequent token."""
    sizes = dict(num_layers=2, hidden_size=128, embedding_size=32, intra_bottleneck_size=32,
                 intermediate_size=128, num_heads=2, max_sequence_length=64)
    flags = small_run_flags(tmp_path / "run", vocab_file, steps=300, loop=100,
                            model="mobile_bert", objective="mlm_nsp", sequence_length=64,
                            max_predictions=10, global_batch_size=32, warmup_steps=20, seed=1,
                            jit_compile="true")
    result = run_here(flags + [f"--config_override={k}={v}" for k, v in sizes.items()])
    assert result.returncode == 0, result.stderr[-3000:]
    final = next(line for line in result.stdout.splitlines() if line.startswith("Final ("))
    logs = dict(item.rsplit(" ", 1) for item in final.split(": ", 1)[1].split(", "))
    assert {"mlm_accuracy", "nsp_accuracy", "nsp_loss"} <= set(logs), final
    baseline = _most_frequent_token_accuracy(vocab_file, 64, 10)
    print(final, f"(most frequent token: {baseline:.4f})")  # shown with pytest -s
    assert float(logs["mlm_accuracy"]) > 1.5 * baseline, (final, baseline)


SERVE_RAW_STRINGS = """
import sys
import numpy as np
import tensorflow as tf
from kbert.tokenizers import SentencePieceTokenizer

export_dir, length = sys.argv[1], int(sys.argv[2])
texts = ["Return the value of the attribute.", "The  file is opened in binary mode!"]
loaded = tf.saved_model.load(export_dir)
# The fill-mask pipeline's answers on raw strings.
filled = loaded.signatures["serving_default"](text=tf.constant(["Return the [MASK] of it."]))
assert filled["num_masks"].numpy().tolist() == [1]
assert np.all(np.diff(filled["score"].numpy()[0, 0]) <= 0), filled["score"]
# The backbone on ids, tokenized by the exported spiece.model.
tokenizer = SentencePieceTokenizer(export_dir + "/spiece.model")
ids = np.zeros((len(texts), length), "int32")
for row, pieces in enumerate(tokenizer.tokenize(texts).to_list()):
    ids[row, : len(pieces) + 2] = [tokenizer.cls_id, *pieces, tokenizer.sep_id]
by_ids = loaded.signatures["serving_ids"](
    token_ids=tf.constant(ids), segment_ids=tf.zeros_like(ids),
    padding_mask=tf.constant((ids != tokenizer.pad_id).astype("int32")))["sequence_output"]
assert np.isfinite(by_ids.numpy()).all()
print("served", by_ids.shape, "pieces", [tokenizer.id_to_token(i) for i in ids[0] if i])
"""


@pytest.mark.slow
def test_albert_learns_with_its_own_sentence_piece_vocabulary(tmp_path):
    """Raw text -> build_vocab.py --type=sentencepiece -> pretrain.py with ALBERT on that
    spiece.model: the MLM beats the most-frequent-token baseline, and the SavedModel serves
    raw strings in a fresh process."""
    from kbert.data import corpora, pretraining_dataset
    from kbert.tokenizers import SentencePieceTokenizer

    corpus, spiece = tmp_path / "corpus.txt", tmp_path / "spiece.model"
    documents = corpora.stdlib_docstrings().take(300).as_numpy_iterator()
    corpus.write_text("\n\n".join("\n".join(s.decode() for s in d) for d in documents))
    result = subprocess.run(
        [sys.executable, BUILD_VOCAB, "--type=sentencepiece", f"--input={corpus}",
         "--learned_vocabulary_size=2000", f"--output={spiece}"],
        capture_output=True, text=True, timeout=600, env=ENV, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    export_dir = tmp_path / "export"
    overrides = dict(num_layers=2, hidden_size=128, num_heads=2, intermediate_size=512,
                     embedding_size=64, max_sequence_length=64)
    result = run_here(small_run_flags(
        tmp_path / "run", spiece, steps=300, loop=100, preset="albert_base", input=corpus,
        objective="mlm", sequence_length=64, max_predictions=10, global_batch_size=32,
        learning_rate=2e-3, warmup_steps=20, seed=1, export_dir=export_dir, jit_compile="true")
        + [f"--config_override={k}={v}" for k, v in overrides.items()])
    assert result.returncode == 0, result.stderr[-3000:]
    accuracy = float(result.stdout.split("Final (300 steps): mlm_accuracy ")[1].split(",")[0])

    data = pretraining_dataset(corpora.text_files(str(corpus)), SentencePieceTokenizer(spiece),
                               sequence_length=64, max_predictions=10, batch_size=32,
                               sentence_task="none", seed=1)
    labels = np.concatenate([l["mask_ids"][l["mask_weights"] > 0]
                             for _, l in data.take(40).as_numpy_iterator()])
    baseline = np.bincount(labels).max() / len(labels)  # ".", about 0.05
    # Seen: 0.0655 (the mean of the last 100 steps, ~30,000 predictions: sd 0.0013) against a
    # baseline of 0.0516. ALBERT's shared layers learn slower than BERT-Tiny's in
    # test_it_learns, so the margin is 1.2x (8 sd), not 1.5x.
    assert accuracy > 1.2 * baseline, (accuracy, baseline, result.stdout[-2000:])

    assert (export_dir / "spiece.model").read_bytes() == spiece.read_bytes()
    served = subprocess.run([sys.executable, "-c", SERVE_RAW_STRINGS, str(export_dir), "64"],
                            capture_output=True, text=True, timeout=600, env=ENV, cwd=ROOT)
    assert served.returncode == 0, served.stderr[-3000:]
    assert "served (2, 64, 128)" in served.stdout and "\u2581return" in served.stdout


@pytest.mark.slow
def test_an_albert_run_learns_its_sentence_piece_model_once(tmp_path):
    """Given no --vocab_file, ALBERT's run learns spiece.model into model_dir (BERT's: a
    vocab.txt); a resumed run reads the same file."""
    from kbert.tokenizers import SentencePieceTokenizer, WordPieceTokenizer
    from kbert.training import pretraining_inputs as sources

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"The cat number {i} sat on the mat, again." for i in range(300)))
    config = parse_flags([f"--model_dir={tmp_path}/albert", "--preset=albert_base",
                          f"--input={corpus}", "--learned_vocabulary_size=60"])
    tokenizer = sources.tokenizer(config, config.model_dir)
    model = tmp_path / "albert" / "spiece.model"
    assert isinstance(tokenizer, SentencePieceTokenizer) and model.exists()
    assert tokenizer.vocabulary[:5] == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    assert tokenizer.unk_id not in tokenizer.tokenize(["the cat sat on the mat"]).to_list()[0]
    learned = model.read_bytes()
    model.write_bytes(learned)  # unchanged bytes, a new mtime: a second learning would differ
    mtime = model.stat().st_mtime_ns
    assert sources.tokenizer(config, config.model_dir).vocabulary == tokenizer.vocabulary
    assert model.stat().st_mtime_ns == mtime and model.read_bytes() == learned

    bert = parse_flags([f"--model_dir={tmp_path}/bert", f"--input={corpus}",
                        "--learned_vocabulary_size=60"])
    assert isinstance(sources.tokenizer(bert, bert.model_dir), WordPieceTokenizer)
    assert (tmp_path / "bert" / "vocab.txt").exists()
