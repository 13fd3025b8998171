"""The figures `tools/benchmark.py` prints, computed from its measured rows.

Pure functions (no TensorFlow, no timing), so that a test can give them made-up measurements
and check every rate and ratio against the rows it comes from.
"""

import statistics


def speed_rows(times, reference, sequences_per_round, flops_per_sequence, peak, steps=None):
    """{name: row} for `train_step` and `finetune`.

    `times`: {name: [seconds of each timed round]}; `reference`: the name the ratios divide
    by (keras-hub's); `sequences_per_round`: sequences one round trains; `flops_per_sequence`:
    {name: training FLOPs of one sequence}; `peak`: GFLOP/s of the matmul; `steps`: steps per
    round (for steps/s). A row: `seconds` (best round), `sequences_per_second`,
    `steps_per_second` (None without `steps`), `gflops`, `of_peak`, `ratio` (the reference's
    best round over this one's: > 1 is faster than the reference) and `ratio_median` (the
    same with median rounds).
    """
    if reference not in times:
        raise ValueError(f"reference {reference!r} is not one of the measured rows: "
                         f"{', '.join(times)}.")
    best_reference = min(times[reference])
    median_reference = statistics.median(times[reference])
    rows = {}
    for name, rounds in times.items():
        seconds = min(rounds)
        rate = sequences_per_round / seconds
        gflops = rate * flops_per_sequence[name] / 1e9
        rows[name] = {"seconds": seconds, "sequences_per_second": rate,
                      "steps_per_second": steps / seconds if steps else None,
                      "gflops": gflops, "of_peak": gflops / peak,
                      "ratio": best_reference / seconds,
                      "ratio_median": median_reference / statistics.median(rounds)}
    return rows


def preprocess_rates(results, lines):
    """{name: (examples/s, lines/s, real tokens/s)} of each pipeline's best round.

    `results`: {name: [(seconds, examples, real tokens) of each round]}; every round reads the
    same `lines` lines. The best round is the fastest one."""
    rates = {}
    for name, rounds in results.items():
        seconds, examples, tokens = min(rounds)
        rates[name] = (examples / seconds, lines / seconds, tokens / seconds)
    return rates


def ratios(ours, theirs):
    """Element by element ours / theirs (rates of the same kind, in the same order)."""
    if len(ours) != len(theirs):
        raise ValueError(f"{len(ours)} rates against {len(theirs)}: not the same measurements.")
    return tuple(a / b for a, b in zip(ours, theirs))


def serve_ratios(latencies, strings, ids, peer):
    """{batch: (strings / ids at p50, ids / peer at p50)} from `latencies`,
    {(name, batch): (p50 ms, p99 ms)}: what tokenizing in the graph adds, and kbert's ids
    signature against the peer's."""
    batches = sorted({batch for _, batch in latencies})
    out = {}
    for batch in batches:
        ids_p50 = latencies[(ids, batch)][0]
        out[batch] = (latencies[(strings, batch)][0] / ids_p50,
                      ids_p50 / latencies[(peer, batch)][0])
    return out
