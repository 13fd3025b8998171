"""kbert's benchmarks: kbert and its peer measured in one run on the same machine.

One module per benchmark (`train_step`, `preprocess`, `serve`, `finetune`, `pipeline`, `beam`,
`finetune_real`, `multitask`, `gpu`, `small`, `summarization`, `modern_bert`), each with a
`run(...)` that prints its table and returns its figures; `benchmarks.cli` parses the flags,
runs one and writes its result as JSON (`benchmarks.record`: date, versions, machine,
command) to `benchmarks/results/<name>.json`, which `benchmarks.report` turns into the
summary table and the plots of docs/benchmarks.md. Run from a clone:

    python tools/benchmark.py train_step        (or: python -m benchmarks train_step)

`benchmarks.reference` holds the peer's side that runs in another Python (torch and
transformers): scripts, not imported here. Nothing here is part of the installed package.
"""
