"""`serve`: latency of a reloaded SavedModel (`kbert.untrusted.load_saved_model`), `preset`
with random weights, sequence 128, TensorFlow limited to `threads` threads.

kbert's string signature (`serving_default`: tokenization and packing in the graph) and its
integer-id signature (`serving_ids`) take the same sentences at batch 1 and 8; keras-hub's
`BertBackbone.export` (integer ids only: keras-hub cannot put its tokenizer in a SavedModel)
is the peer. Calls take turns across the contestants. Printed and returned: p50 and p99 in
ms, the ratio string / ids at p50 (what tokenization adds; target <= 1.10) and kbert ids /
keras-hub.
"""

import os
import time

from benchmarks import ratios
from benchmarks.steps import keras_hub_backbone


def run(preset, calls, threads, vocab_sentences, lengths=(), length_calls=10):
    """Prints the table; returns {"preset", "sequence_length", "threads", "calls",
    "latency_ms": {"<signature>/<batch>": [p50, p99]}, "ratios": {batch: {"strings_over_ids",
    "kbert_ids_over_peer"}}} (at p50), and with `lengths`, "by_length": {"batch_size": 8,
    "calls", "p50_ms": {signature: {length: ms}}}: the two id signatures at each sequence
    length, `length_calls` timed calls each (random ids: latency does not depend on their
    values). The exports go to a temporary folder, deleted at the end."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="kbert-serve-")
    try:
        return _measure(folder, preset, calls, threads, vocab_sentences, lengths, length_calls)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _measure(folder, preset, calls, threads, vocab_sentences, lengths, length_calls):
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    import numpy as np

    import kbert
    from kbert.data import corpora
    from kbert.untrusted import load_saved_model
    from kbert.tokenizers.packing import pack_segments as pack
    from kbert.tokenizers import WordPieceTokenizer
    from kbert.tokenizers.vocab_learning import learn_vocabulary, write_vocabulary

    sequence_length = 128
    vocab = os.path.join(folder, "vocab.txt")
    print("Learning a vocabulary from the stdlib corpus (untimed) ...", flush=True)
    write_vocabulary(learn_vocabulary(corpora.stdlib_docstrings(), 8000,
                                      max_sentences=vocab_sentences), vocab)
    tokenizer = WordPieceTokenizer(vocab)
    backbone = kbert.presets.load(preset, head=None, weights=None,
                                  vocabulary_size=tokenizer.vocabulary_size)
    config = backbone.config
    print(f"Exporting {preset} (random weights) ...", flush=True)
    # Feature extraction, every text cut to `sequence_length` tokens: the texts below are
    # longer, so that the strings and the ids are packed alike.
    kbert.export(backbone, os.path.join(folder, "kbert"), tokenizer=tokenizer,
                 tokenize_kwargs={"truncation": True, "max_length": sequence_length})
    peer = keras_hub_backbone(config)
    peer.export(os.path.join(folder, "keras_hub"), format="tf_saved_model", verbose=False)
    # Checked like any SavedModel kbert loads (the check is untimed).
    ours = load_saved_model(os.path.join(folder, "kbert"))
    theirs = load_saved_model(os.path.join(folder, "keras_hub"))

    # Texts just over sequence_length tokens: sentences joined until they pass it. WordPiece
    # splits on whitespace first, so a text's count is the sum of its sentences' counts.
    sentences, text, count = [], b"", 0
    for document in corpora.stdlib_docstrings().take(2000).as_numpy_iterator():
        for sentence, tokens in zip(document, tokenizer.tokenize(tf.constant(document))):
            text += b" " + sentence
            count += len(tokens)
            if count > sequence_length:
                sentences.append(text)
                text, count = b"", 0
        if len(sentences) >= 8 * calls:
            break
    results = {}
    for batch in (1, 8):
        texts = [tf.constant(sentences[i * batch:(i + 1) * batch])
                 for i in range(calls)]
        ids = [pack(tokenizer, [tokenizer.tokenize(t)], sequence_length) for t in texts]
        contestants = {
            "kbert strings (serving_default)":
                lambda i: ours.signatures["serving_default"](text=texts[i]),
            "kbert ids (serving_ids)": lambda i: ours.signatures["serving_ids"](**ids[i]),
            "keras-hub ids (serve)": lambda i: theirs.serve(ids[i]),
        }
        for call in contestants.values():  # warm-up
            for i in range(3):
                call(i)
        times = {name: [] for name in contestants}
        for i in range(calls):
            for name, call in contestants.items():
                start = time.perf_counter()
                out = call(i)
                tf.nest.map_structure(lambda t: t.numpy(), out)
                times[name].append(1000 * (time.perf_counter() - start))
        for name, values in times.items():
            results[(name, batch)] = (np.percentile(values, 50), np.percentile(values, 99))
        print(f"  batch {batch} done", flush=True)

    print()
    print(f"{preset}, sequence {sequence_length}, {threads} threads, "
          f"{calls} calls each")
    print(f"{'signature':34s} {'batch':>5s} {'p50 ms':>9s} {'p99 ms':>9s}")
    for (name, batch), (p50, p99) in results.items():
        print(f"{name:34s} {batch:5d} {p50:9.1f} {p99:9.1f}")
    by_batch = ratios.serve_ratios(results, "kbert strings (serving_default)",
                                    "kbert ids (serving_ids)", "keras-hub ids (serve)")
    for batch, (strings_over_ids, ids_over_peer) in by_batch.items():
        print(f"batch {batch}: strings / ids at p50 {strings_over_ids:.3f} (target <= 1.10); "
              f"kbert ids / keras-hub ids at p50 {ids_over_peer:.3f}")
    by_length = by_sequence_length(ours, theirs, config.vocabulary_size, lengths,
                                   length_calls) if lengths else None
    return {"preset": preset, "sequence_length": sequence_length, "threads": threads,
            "calls": calls, "latency_ms": {f"{name}/{batch}": list(value)
                                           for (name, batch), value in results.items()},
            "ratios": {batch: {"strings_over_ids": a, "kbert_ids_over_peer": b}
                       for batch, (a, b) in by_batch.items()},
            "by_length": by_length}


def by_sequence_length(ours, theirs, vocabulary_size, lengths, calls, batch=8):
    """p50 ms of kbert's `serving_ids` and keras-hub's `serve` at each of `lengths` (batch
    `batch`, random ids, no padding), taking turns; printed and returned."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    names = ("kbert ids (serving_ids)", "keras-hub ids (serve)")
    p50 = {name: {} for name in names}
    low = min(1000, vocabulary_size // 2)  # past the special tokens of a small vocabulary
    for length in lengths:
        ids = {"token_ids": tf.constant(rng.integers(low, vocabulary_size, (batch, length)),
                                        tf.int32),
               "segment_ids": tf.zeros((batch, length), tf.int32),
               "padding_mask": tf.ones((batch, length), tf.int32)}
        contestants = {names[0]: lambda: ours.signatures["serving_ids"](**ids),
                       names[1]: lambda: theirs.serve(ids)}
        for call in contestants.values():  # warm-up: a new shape traces anew
            for _ in range(2):
                tf.nest.map_structure(lambda t: t.numpy(), call())
        times = {name: [] for name in names}
        for _ in range(calls):
            for name, call in contestants.items():
                start = time.perf_counter()
                tf.nest.map_structure(lambda t: t.numpy(), call())
                times[name].append(1000 * (time.perf_counter() - start))
        for name in names:
            p50[name][length] = float(np.percentile(times[name], 50))
        print(f"  length {length} done", flush=True)
    print(f"\nbatch {batch}, p50 ms by sequence length ({calls} calls each)")
    print(f"{'signature':34s} " + " ".join(f"{n:>8d}" for n in lengths))
    for name in names:
        print(f"{name:34s} " + " ".join(f"{p50[name][n]:8.1f}" for n in lengths))
    print(f"{'kbert / keras-hub':34s} " + " ".join(
        f"{p50[names[0]][n] / p50[names[1]][n]:8.3f}" for n in lengths))
    return {"batch_size": batch, "calls": calls, "p50_ms": p50}
