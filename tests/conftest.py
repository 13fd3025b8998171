import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Under pytest-xdist the workers share the machine's cores (pytest.ini: two workers, CI's two
# cores): TensorFlow in each worker, and in the processes its tests start (they inherit the
# variables), runs its ops on one thread instead of a pool per core, so that the workers do
# not contend. Measured on the 2-core machine, alone, four training and export files
# (tests/tools/test_pretrain_roberta.py, test_pretrain_deberta_v3.py,
# tests/training/test_finetune_learning.py, tests/export/test_task_exports.py) with two
# workers: 212 s with TensorFlow's default pools, 179 s with these. Set either variable to
# override.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
    os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")

# XLA compiles the train, predict and export steps of hundreds of small models here, most run
# for a few steps: without LLVM's expensive passes, compiling costs less and the compiled
# steps run as fast (measured alone, -n 0: tests/training/test_multitask.py 122 s -> 104 s;
# the 400- and 300-step runs of tests/tools/test_pretrain.py 57 + 38 s -> 57 + 34 s). XLA's
# optimization level 0 compiles faster still but made those runs 40-90% slower. The processes
# the tests start inherit it.
_CHEAP_PASSES = "--xla_llvm_disable_expensive_passes=true"
if _CHEAP_PASSES.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_CHEAP_PASSES}".strip()

import ipaddress  # noqa: E402
import socket  # noqa: E402

import keras  # noqa: E402
import pytest  # noqa: E402


def _loopback(address):
    host = address[0] if isinstance(address, tuple) and address else address
    if host in ("localhost", "", None):
        return True
    try:
        ip = ipaddress.ip_address(str(host).split("%")[0])
    except ValueError:
        return False  # a host name other than localhost: it would be looked up on a network
    return ip.is_loopback or ip.is_unspecified


def _refuse_the_network():
    """Tests never download anything: a connection from a test's process to anything but
    this machine's loopback raises (processes the tests start are not covered)."""
    for name in ("connect", "connect_ex"):
        real = getattr(socket.socket, name)

        def guarded(self, address, _real=real):
            if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
                raise ConnectionRefusedError(
                    f"tests never download anything: a connection to {address!r} was "
                    "refused by tests/conftest.py")
            return _real(self, address)

        setattr(socket.socket, name, guarded)


_refuse_the_network()


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


def run_folder(tmp_path_factory):
    """The folder of this test run that the xdist workers share (pytest-N/, above each
    worker's popen-gwK/), or the run's own base folder without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def made_once(folder, name, make):
    """`folder / name`, made by `make(partial_path)` by the first worker of the run that asks
    for it, under a lock of its own, and renamed into place whole (a file or a folder): the
    others wait for it, then share it."""
    import fcntl
    import shutil

    path = folder / name
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            partial = folder / f"{name}.partial"
            try:
                make(partial)
            except BaseException:
                # What a failed attempt left is not reused: the next caller makes it anew.
                shutil.rmtree(partial, ignore_errors=True) if partial.is_dir() else (
                    partial.unlink(missing_ok=True))
                raise
            partial.rename(path)
    return path


@pytest.fixture(scope="session")
def run_files(tmp_path_factory):
    """`run_files(name, make)`: `made_once` in the folder the run's workers share."""
    folder = run_folder(tmp_path_factory)
    return lambda name, make: made_once(folder, name, make)


@pytest.fixture(scope="session")
def stdlib_vocab_file(run_files):
    """A WordPiece vocab.txt of 2,000 learned from the first 4,000 sentences of the stdlib
    docstrings (kbert.data.corpora): learned once per test run (about 7 s of CPU) and shared
    by the xdist workers (`run_files`)."""

    def learn(partial):
        from kbert.data import corpora
        from kbert.tokenizers.vocab_learning import learn_vocabulary, write_vocabulary

        write_vocabulary(learn_vocabulary(corpora.stdlib_docstrings(), 2000,
                                          max_sentences=4000), str(partial))

    return str(run_files("stdlib_vocab_2000.txt", learn))


@pytest.fixture(scope="session")
def pipeline_export(run_files):
    """`pipeline_export(task, model, options)`: the path of `load_pipeline(task,
    model).export(path, **options)` (tests/pipelines/conftest.py's pipeline), exported once
    per test run and shared by every module and xdist worker that asks for the same export
    (one costs about 5 s of CPU, most of it tracing). An error of the export (options it
    refuses) is raised to each caller."""
    import hashlib
    import json

    from tests.pipelines.conftest import load_pipeline

    def export(task, model, options):
        key = json.dumps([task, model, options], sort_keys=True)
        name = f"pipeline_export_{hashlib.sha256(key.encode()).hexdigest()[:16]}"
        return str(run_files(name, lambda partial: load_pipeline(task, model).export(
            str(partial), **options)))

    return export


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes over ~20 s; still runs in CI")


# The files that take longest, heaviest first (by what they run: training and export
# subprocesses, SavedModel exports and conversions; refresh it from CI's --durations output).
# pytest-xdist hands whole files to the two workers in collection order (pytest.ini:
# --dist loadfile --no-loadscope-reorder): long files first, so that the last ones to finish
# are short and neither worker idles while the other ends a long one. xdist's own order (most
# tests first) put several one-test files of minutes at the end.
HEAVIEST_FIRST = (  # ~seconds in CI (2 cores, both workers busy), from --durations
    "tests/tools/test_pretrain.py",  # ~550
    "tests/pipelines/test_export.py",  # ~250
    "tests/pipelines/test_export_families.py",  # ~150
    "tests/test_under_jax.py",  # ~115
    "tests/training/test_finetune_learning.py",  # ~115
    "tests/tools/test_pretrain_deberta_v3.py",  # ~110
    "tests/tools/test_benchmark_subcommands.py",  # ~110
    "tests/tools/test_pretrain_roberta.py",  # ~85
    "tests/training/test_multitask.py",  # ~80
    "tests/colab/test_notebooks.py",  # ~80
    "tests/test_readme.py",  # ~75
    "tests/untrusted/test_saved_model_check.py",  # ~70
    "tests/pipelines/test_onnx.py",  # ~90: a tf2onnx conversion per test, ~4 s each
    "tests/batch/test_beam_prediction.py",  # ~60
    "tests/tools/test_predict.py",  # ~60
    "tests/test_wheel.py",  # ~50: a build, a venv, three TensorFlow start-ups, 4 steps
    "tests/test_programs.py",  # ~30
    "tests/tools/test_finetune.py",
    "tests/export/test_tflite_classifiers.py",
    "tests/test_extending.py",
    "tests/export/test_tflite.py",
    "tests/export/test_tflite_tasks.py",
    "tests/export/test_tflite_pipelines.py",
    "tests/export/test_tflite_mobile_bert.py",
    "tests/export/test_tflite_int8.py",
    "tests/pipelines/test_roberta.py",  # ~45
    "tests/export/test_task_exports.py",  # ~45
    "tests/tools/test_benchmark.py",
    "tests/tools/test_distill_tokenizers.py",
    "tests/data/test_pretraining_examples.py",
    "tests/batch/test_pretraining_beam.py",  # ~27
    "tests/tools/test_convert_checkpoint.py",
    "tests/pipelines/test_question_answering.py",
    "tests/pipelines/test_text_classification.py",
    "tests/data/test_masking.py",
    "tests/training/test_strategies.py",
    "tests/export/test_saved_model.py",
    "tests/convert/test_transformers_reads_kbert.py",  # ~15
)


def pytest_collection_modifyitems(config, items):
    """Files in HEAVIEST_FIRST's order, then the others, most tests first; tests keep their
    order inside a file."""
    rank = {path: i for i, path in enumerate(HEAVIEST_FIRST)}
    counts = {}
    for item in items:
        path = item.nodeid.split("::")[0]
        counts[path] = counts.get(path, 0) + 1
    first = {}
    for i, item in enumerate(items):
        first.setdefault(item.nodeid.split("::")[0], i)

    def key(item):
        path = item.nodeid.split("::")[0]
        return rank.get(path, len(rank)), -counts[path], first[path]

    items.sort(key=key)



def pytest_sessionfinish(session):
    # KBERT_MODULES_SEEN=path writes the kbert modules this session imported: how to check
    # that the fast tier (-m "not slow") reaches every module (README, "Development"). Under
    # pytest-xdist each worker writes path.<worker id> as it ends; the controller, which ends
    # last, writes their union to path.
    import glob
    import os
    import sys

    path = os.environ.get("KBERT_MODULES_SEEN")
    if not path:
        return
    seen = {m for m in sys.modules if m.startswith("kbert")}
    worker = getattr(session.config, "workerinput", None)
    if worker is not None:
        with open(f"{path}.{worker['workerid']}", "w") as f:
            f.write("\n".join(sorted(seen)))
        return
    for part in glob.glob(f"{glob.escape(path)}.gw*"):
        with open(part) as f:
            seen |= set(f.read().split())
        os.remove(part)
    with open(path, "w") as f:
        f.write("\n".join(sorted(seen)))
