"""transformers' text-classification pipeline over a list of texts, timed: the peer row of
`tools/benchmark.py pipeline`, run in a Python with torch and transformers (which need not
have kbert or TensorFlow).

    python benchmarks/reference/transformers_pipeline.py --model DIR --texts texts.json --batch_size 32

The model: `AutoModelForSequenceClassification` of `--model` (a checkpoint without a
classification head gets transformers' new random one, 2 labels). One untimed warm-up call on
the first batch, then one timed pass over all texts with `truncation=True`. Prints one JSON
line: {"seconds", "versions", "texts"}.
"""

import argparse
import json
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="checkpoint directory")
    parser.add_argument("--texts", required=True, help="JSON file: a list of strings")
    parser.add_argument("--batch_size", type=int, default=32)
    args = parser.parse_args()
    if args.batch_size < 1:
        parser.error(f"--batch_size must be at least 1, got {args.batch_size}")

    import torch
    import transformers

    transformers.logging.set_verbosity_error()  # the new head's "newly initialized" notice
    with open(args.texts, encoding="utf-8") as f:
        texts = json.load(f)
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        parser.error(f"--texts={args.texts} must hold a JSON list of strings")
    pipe = transformers.pipeline("text-classification", model=args.model,
                                 tokenizer=args.model, device=-1)
    with torch.inference_mode():
        pipe(texts[:args.batch_size], batch_size=args.batch_size, truncation=True)
        start = time.perf_counter()
        pipe(texts, batch_size=args.batch_size, truncation=True)
        seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "texts": len(texts),
                      "versions": f"transformers {transformers.__version__}, "
                                  f"torch {torch.__version__}"}))


if __name__ == "__main__":
    main()
