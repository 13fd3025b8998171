"""transformers' ModernBERT encoder, timed: the peer rows of `tools/benchmark.py modern_bert`,
run in a Python with torch and transformers (which need not have kbert or TensorFlow).

    python benchmarks/reference/transformers_modern_bert.py --config config.json --ids ids.json \\
        --batch_size 32
    python benchmarks/reference/transformers_modern_bert.py --config config.json --long 8192
    python benchmarks/reference/transformers_modern_bert.py --config bert.json --long 512 --rows 32

The model: the encoder (`AutoModel`) of the config.json `--config`, of the family its
`model_type` names (`ModernBertModel`, `BertModel`, ...; random weights, float32, CPU,
transformers' default attention: sdpa, ModernBERT's sliding windows as a [S, S] mask). With `--ids`
(a JSON list of token-id lists): one untimed warm-up call on the first batch, then one timed
pass over the sequences in batches of `--batch_size` in input order, each padded to its own
longest sequence (what transformers' pipelines do), once more with the batches grouped by
length (kbert's pipelines' order). With `--long N`: one untimed warm-up call on 16 tokens, then
one timed forward of `--rows` sequences of N tokens in one batch (default one), with the
process's peak memory over it. Prints one JSON line.

`peak_reset` and `memory_gib` are shared with benchmarks/modern_bert.py (Linux /proc).
"""

import argparse
import json
import time


def peak_reset():
    """Starts the process's peak resident memory (VmHWM) afresh (Linux: clear_refs 5)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def memory_gib():
    """(resident, peak resident) memory of this process in GiB, from /proc/self/status."""
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0]) / 2**20  # kB -> GiB
    return fields["VmRSS"], fields["VmHWM"]


def long_ids(length, cls_id, sep_id):
    """The one long sequence both sides run: [CLS], `length` - 2 ordinary ids, [SEP]."""
    return [cls_id] + [1000 + i % 40000 for i in range(length - 2)] + [sep_id]


def batches(ids, batch_size, grouped):
    """Index lists of the batches: input order, or sorted by length (longest first) with the
    one smaller batch at whichever end pads fewer tokens, as kbert's pipelines cut them
    (`kbert.pipelines.batching.length_groups`, which this Python without kbert cannot
    import)."""
    if not grouped:
        order = list(range(len(ids)))
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    options = []
    for first in dict.fromkeys((len(order) % batch_size or batch_size, batch_size)):
        cuts = [0] + list(range(min(first, len(order)), len(order), batch_size)) + [len(order)]
        cut = [order[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]
        options.append((sum(len(b) * len(ids[b[0]]) for b in cut), cut))
    return min(options, key=lambda option: option[0])[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True,
                        help="a config.json (its model_type says the family)")
    parser.add_argument("--ids", help="JSON file: a list of token-id lists")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--long", type=int, help="tokens of each long sequence")
    parser.add_argument("--rows", type=int, default=1, help="long sequences in the batch")
    args = parser.parse_args()
    if (args.ids is None) == (args.long is None):
        parser.error("give one of --ids and --long")
    if args.batch_size < 1:
        parser.error(f"--batch_size must be at least 1, got {args.batch_size}")
    if args.rows < 1:
        parser.error(f"--rows must be at least 1, got {args.rows}")

    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    with open(args.config, encoding="utf-8") as f:
        values = json.load(f)
    config = transformers.AutoConfig.for_model(values.pop("model_type"), **values)
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(config).eval()
    pad = config.pad_token_id
    versions = (f"transformers {transformers.__version__}, torch {torch.__version__}, "
                f"{torch.get_num_threads()} threads, attention "
                f"{model.config._attn_implementation}")

    def forward(rows):
        length = max(len(r) for r in rows)
        token_ids = torch.full((len(rows), length), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), length), dtype=torch.long)
        for i, r in enumerate(rows):
            token_ids[i, :len(r)] = torch.tensor(r)
            mask[i, :len(r)] = 1
        return model(input_ids=token_ids, attention_mask=mask).last_hidden_state.numpy()

    result = {"versions": versions}
    with torch.inference_mode():
        if args.ids is not None:
            with open(args.ids, encoding="utf-8") as f:
                ids = json.load(f)
            forward(ids[:args.batch_size])
            for name, grouped in (("input_order", False), ("grouped", True)):
                start = time.perf_counter()
                for batch in batches(ids, args.batch_size, grouped):
                    forward([ids[i] for i in batch])
                result[f"{name}_seconds"] = time.perf_counter() - start
        else:
            cls_id = getattr(config, "cls_token_id", None) or 101  # BERT's config has none
            sep_id = getattr(config, "sep_token_id", None) or 102
            forward([[cls_id] * 16])
            before, _ = memory_gib()
            peak_reset()
            start = time.perf_counter()
            forward([long_ids(args.long, cls_id, sep_id)] * args.rows)
            result["seconds"] = time.perf_counter() - start
            _, peak = memory_gib()
            result.update(rss_before_gib=before, peak_gib=peak)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
