"""`tools/benchmark.py modern_bert`: kbert's ModernBERT encoder beside transformers' on the same
machine in one run: texts/s on texts of mixed lengths, and one long sequence's forward.

The model: `--modern_bert_preset`'s architecture (default modern_bert_base: L22 H768 A12,
128-token windows, a global layer every third) with random weights, float32, on the CPU,
both sides; `--modern_bert_config` changes fields of both (a quick look; the numbers are then
not the preset's). transformers' `ModernBertModel` is built from the config.json that kbert's
converter writes for the same config (`kbert.convert`), in `--reference_python`
(benchmarks/reference/transformers_modern_bert.py).

The texts: the pipeline benchmark's (`benchmark_pipeline.make_texts`, the same lengths for
the same `--seed`: most a few to a few dozen words, one in a hundred 400-500 words), as token
ids: one id per word and per full stop, [CLS] and [SEP] around (no tokenizer is timed; both
sides take the same ids). Timed after an untimed warm-up call: one pass over all texts in
batches of `--batch_size`, each padded to its own longest sequence, once with the batches
grouped by length (kbert's pipelines' order, `kbert.pipelines.batching`) and once in input
order (transformers' pipelines' order), on each side; both models return the sequence output
[B, S, H] as numpy. The ratio the target is stated for compares each side in its own
pipelines' order; the same-order ratios are printed beside it.

The long forward: one sequence of `--modern_bert_long` tokens (8,192: ModernBERT's context),
each side in a fresh process (an untimed 16-token call first): seconds, and the process's
peak resident memory over the forward (Linux /proc: the peak counter is reset just before)
beside its resident memory before it (the model and the runtime).
"""

import itertools
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

# The repository, for when this file runs as a script (the long forward's fresh process).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks import pipeline as benchmark_pipeline  # noqa: E402
from benchmarks.reference import transformers_modern_bert as peer  # noqa: E402  (no torch)

PERIOD_ID = 15  # the id of a full stop; the words' ids start at WORD_IDS
WORD_IDS = 1000


def text_ids(count, seed, cls_id, sep_id):
    """The pipeline benchmark's `count` texts of `seed` as token-id lists (see above)."""
    words = ["".join(letters) for letters in itertools.product("abcdefghijklmnopqrstuvwxyz",
                                                               repeat=3)]
    index = {w: WORD_IDS + i for i, w in enumerate(words)}
    result = []
    for text in benchmark_pipeline.make_texts(words, count, seed):
        ids = [cls_id]
        for word in text.split():
            ids.append(index[word.rstrip(".").lower()])
            if word.endswith("."):
                ids.append(PERIOD_ID)
        result.append(ids + [sep_id])
    return result


def kbert_runner(preset, overrides):
    """(the preset's random backbone in kbert's pipeline runner, its config)."""
    import kbert
    from kbert.pipelines.model_source import KerasRunner

    backbone = kbert.presets.load(preset, head=None, weights=None, **overrides)
    return KerasRunner(backbone), backbone.config


def kbert_seconds(runner, ids, batch_size, pad_id, grouped):
    from kbert.pipelines import batching

    sequences = [batching.Sequence(row) for row in ids]
    start = time.perf_counter()
    if grouped:
        batching.run(runner, sequences, pad_id, batch_size, progress=False)
    else:
        for batch in peer.batches(ids, batch_size, grouped=False):
            runner(batching.pad_batch([sequences[i] for i in batch], pad_id))
    return time.perf_counter() - start


def hf_config(config, family="modern_bert"):
    """The config.json of `config` (a config of kbert family `family`) that transformers
    reads (its `model_type` says the family)."""
    from kbert.convert import families

    values = families.get(family).config_to_hf(config)
    return {**values, "architectures": [f"{type(config).__name__[:-len('Config')]}Model"]}


def long_forward(preset, overrides, length, rows=1):
    """The long forward in this process, `rows` sequences of `length` tokens in one batch:
    {"seconds", "rss_before_gib", "peak_gib"}."""
    runner, config = kbert_runner(preset, overrides)
    specials = hf_config(config, family_of(preset))
    cls_id, sep_id = _specials(specials)
    runner(_features(np.array(warm_up_shape(rows, length, cls_id), np.int32)))
    features = _features(np.array([peer.long_ids(length, cls_id, sep_id)] * rows, np.int32))
    before, _ = peer.memory_gib()
    peer.peak_reset()
    start = time.perf_counter()
    runner(features)
    seconds = time.perf_counter() - start
    _, peak = peer.memory_gib()
    return {"seconds": seconds, "rss_before_gib": before, "peak_gib": peak}


def warm_up_shape(rows, length, cls_id):
    """Ids of a batch as small as can be that runs the runner's graph of open shapes that
    `rows` x `length` runs (for long batches, in blocks of queries, or for short ones), so
    that the timed call does not trace it."""
    from kbert.layers import query_blocks

    if not query_blocks.is_long(rows, length):
        return [[cls_id] * min(16, length)]
    width = min(length, query_blocks.LONG)
    return [[cls_id] * width] * -(-query_blocks.LONG ** 2 // width ** 2)


def _features(ids):
    """The runner's features of token ids [B, S] without padding (segment 0: BERT's inputs
    name segments; ModernBERT's take none)."""
    return {"token_ids": ids, "padding_mask": np.ones_like(ids),
            "segment_ids": np.zeros_like(ids)}


def family_of(preset):
    """The kbert family name of preset `preset`."""
    import kbert

    return kbert.presets.get(preset)["model"]


# The [CLS] and [SEP] ids transformers' config classes default to where the config.json names
# none (kbert's converter writes none): ModernBertConfig's 50281 and 50282; BertConfig has
# none, and the reference script takes BERT's vocabulary's 101 and 102, as here.
_DEFAULT_SPECIALS = {"modernbert": (50281, 50282)}


def _specials(values):
    """([CLS], [SEP]) ids of a transformers config.json dict: its own, else what
    transformers' config class of its `model_type` defaults to (`_DEFAULT_SPECIALS`, BERT's
    101 and 102 otherwise), so that both sides run the same ids."""
    cls_id, sep_id = _DEFAULT_SPECIALS.get(values.get("model_type"), (101, 102))
    return values.get("cls_token_id", cls_id), values.get("sep_token_id", sep_id)


def _json_line(command, what):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{what} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _added_mib(result):
    return (result["peak_gib"] - result["rss_before_gib"]) * 1024


def _long_row(name, result):
    print(f"{name:44s} {result['seconds']:8.1f} {result['peak_gib']:10.2f} "
          f"{result['rss_before_gib']:10.2f} {_added_mib(result):10.0f}")


def run(preset, overrides, count, batch_size, seed, long_length, reference_python,
        bert_preset="bert_base", bert_rows=32):
    """Prints the tables; returns {"preset", "overrides", "texts", "batch_size", "seed",
    "tokens", "seconds": {"<kbert|transformers>/<grouped|input_order>"}, "long": {"tokens",
    "kbert", "transformers": {"seconds", "rss_before_gib", "peak_gib"} or None},
    "bert_long": {"preset", "tokens", "rows", "kbert", "transformers"} (as "long"; None with
    `bert_rows` 0), "transformers_versions", "skipped" (why transformers did not run, or
    None)}."""
    import keras
    import tensorflow as tf

    import kbert

    python = reference_python or sys.executable
    problem = benchmark_pipeline.reference_python_problem(python)
    runner, config = kbert_runner(preset, overrides)
    specials = hf_config(config, family_of(preset))
    pad_id = specials.get("pad_token_id", 50283)
    ids = text_ids(count, seed, *_specials(specials))
    lengths = [len(row) for row in ids]
    print(f"modern_bert: {preset} (L{config.num_layers} H{config.hidden_size} "
          f"A{config.num_heads}, window {config.local_attention}, a global layer every "
          f"{config.global_attn_every_n_layers}), random weights, float32, CPU"
          + (f"; overrides {overrides}" if overrides else ""))
    print(f"machine: {os.cpu_count()} cores, shared with other jobs (times are upper bounds); "
          f"TensorFlow {tf.__version__}, Keras {keras.__version__}, kbert {kbert.__version__}")
    print(f"texts: {count} (seed {seed}, the pipeline benchmark's lengths), batch {batch_size}; "
          f"tokens median {int(np.median(lengths))}, 90th percentile "
          f"{int(np.percentile(lengths, 90))}, longest {max(lengths)}; {sum(lengths):,d} in all")

    runner(batching_features(ids[:batch_size], pad_id))  # warm-up: traces the graph
    rows = {}
    for grouped in (True, False):
        order = "length-grouped" if grouped else "input order"
        print(f"  kbert, {order} ...", flush=True)
        rows[("kbert", grouped)] = kbert_seconds(runner, ids, batch_size, pad_id, grouped)
    versions = None
    with tempfile.TemporaryDirectory() as folder:
        config_file = os.path.join(folder, "config.json")
        with open(config_file, "w", encoding="utf-8") as f:
            json.dump(specials, f)
        if problem is None:
            ids_file = os.path.join(folder, "ids.json")
            with open(ids_file, "w", encoding="utf-8") as f:
                json.dump(ids, f)
            print(f"  transformers in {python} ...", flush=True)
            result = _json_line([python, peer.__file__, "--config", config_file, "--ids",
                                 ids_file, "--batch_size", str(batch_size)],
                                "transformers' ModernBERT")
            versions = result["versions"]
            rows[("transformers", True)] = result["grouped_seconds"]
            rows[("transformers", False)] = result["input_order_seconds"]
        print(f"  long forward ({long_length} tokens), kbert in a fresh process ...", flush=True)
        kbert_long = _json_line([sys.executable, __file__, preset, json.dumps(overrides),
                                 str(long_length)], "kbert's long forward")
        peer_long = None
        if problem is None:
            print(f"  long forward ({long_length} tokens), transformers ...", flush=True)
            peer_long = _json_line([python, peer.__file__, "--config", config_file, "--long",
                                    str(long_length)], "transformers' long forward")
        bert_long = None
        if bert_rows:
            bert_long = _bert_long(bert_preset, bert_rows, folder,
                                   python if problem is None else None)

    print()
    print(f"{'run':44s} {'seconds':>8s} {'texts/s':>8s}")
    for (side, grouped), seconds in rows.items():
        order = "length-grouped batches" if grouped else "batches in input order"
        print(f"{side + ', ' + order:44s} {seconds:8.1f} {count / seconds:8.1f}")
    if versions is None:
        print(f"kbert / transformers in texts/s: skipped: {problem}; pass "
              "--reference_python=PYTHON with torch and transformers")
    else:
        print(f"transformers: {versions}")
        own = rows[("transformers", False)] / rows[("kbert", True)]
        print(f"kbert / transformers in texts/s, each in its pipelines' order: {own:.2f} "
              f"(target >= 1.5); both length-grouped: "
              f"{rows[('transformers', True)] / rows[('kbert', True)]:.2f}; both in input "
              f"order: {rows[('transformers', False)] / rows[('kbert', False)]:.2f}")
    print()
    print(f"{'one sequence of ' + str(long_length) + ' tokens':44s} {'seconds':>8s} "
          f"{'peak GiB':>10s} {'before GiB':>10s} {'added MiB':>10s}")
    _long_row("kbert", kbert_long)
    if peer_long is not None:
        _long_row("transformers", peer_long)
        added = _added_mib(peer_long)
        memory = (f"{_added_mib(kbert_long) / added:.2f}" if added >= 10
                  else "not measured (transformers adds under 10 MiB)")
        print(f"kbert / transformers in seconds: {kbert_long['seconds'] / peer_long['seconds']:.2f}"
              f"; in memory added by the forward: {memory}")
    if bert_long is not None:
        print()
        title = f"{bert_preset}: {bert_rows} x {bert_long['tokens']} tokens"
        print(f"{title:44s} {'seconds':>8s} {'peak GiB':>10s} {'before GiB':>10s} "
              f"{'added MiB':>10s}")
        _long_row("kbert", bert_long["kbert"])
        if bert_long["transformers"] is not None:
            _long_row("transformers", bert_long["transformers"])
            print("kbert / transformers in seconds: "
                  f"{bert_long['kbert']['seconds'] / bert_long['transformers']['seconds']:.2f}; "
                  "in memory added by the forward: "
                  f"{_added_mib(bert_long['kbert']) / _added_mib(bert_long['transformers']):.2f}")
    return {"preset": preset, "overrides": overrides, "texts": count, "batch_size": batch_size,
            "seed": seed, "tokens": sum(lengths),
            "seconds": {f"{side}/{'grouped' if grouped else 'input_order'}": seconds
                        for (side, grouped), seconds in rows.items()},
            "transformers_versions": versions, "skipped": problem,
            "long": {"tokens": long_length, "kbert": kbert_long, "transformers": peer_long},
            "bert_long": bert_long}


def _bert_long(preset, rows, folder, python):
    """One batch of `rows` sequences at preset `preset`'s longest length, each side in a fresh
    process (transformers' where `python` is given): {"preset", "tokens", "rows", "kbert",
    "transformers"}."""
    import kbert

    config = kbert.presets.config(preset)
    length = config.max_sequence_length
    print(f"  {preset}: {rows} sequences of {length} tokens, kbert in a fresh process ...",
          flush=True)
    ours = _json_line([sys.executable, __file__, preset, "{}", str(length), str(rows)],
                      f"kbert's {preset} forward")
    theirs = None
    if python is not None:
        config_file = os.path.join(folder, f"{preset}.json")
        with open(config_file, "w", encoding="utf-8") as f:
            json.dump(hf_config(config, family_of(preset)), f)
        print(f"  {preset}: {rows} sequences of {length} tokens, transformers ...", flush=True)
        theirs = _json_line([python, peer.__file__, "--config", config_file, "--long",
                             str(length), "--rows", str(rows)], f"transformers' {preset} forward")
    return {"preset": preset, "tokens": length, "rows": rows, "kbert": ours,
            "transformers": theirs}


def batching_features(rows, pad_id):
    from kbert.pipelines import batching

    return batching.pad_batch([batching.Sequence(r) for r in rows], pad_id)


if __name__ == "__main__":  # the long forward's fresh process: preset, overrides JSON, length
    # [, rows]
    print(json.dumps(long_forward(sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]),
                                  *(int(a) for a in sys.argv[4:5]))))
