"""optimum's ONNX Runtime sentence embeddings, timed: the peer rows of `tools/benchmark.py
serving`, run in a Python with torch, transformers and optimum-onnx[onnxruntime] (which need
not have kbert or TensorFlow). optimum 2 / optimum-onnx 0.1 need transformers < 4.58: keep
them in a Python of their own.

    python benchmarks/reference/optimum_serving.py --model DIR --texts texts.json \\
        --output embeddings.npz [--batch_size 32] [--passes 3]

What a CPU serving user of optimum runs: `ORTModelForFeatureExtraction.from_pretrained(DIR,
export=True)` (float32), and the same quantized by `ORTQuantizer` with
`AutoQuantizationConfig.avx512_vnni(is_static=False)` where the CPU has AVX512-VNNI, else
`.avx2(is_static=False)` (optimum's dynamic int8, its defaults), both on ONNX Runtime's
default session (its threads, graph optimizations on). Each text set is tokenized by the
checkpoint's fast tokenizer in batches of `--batch_size` in length order (as kbert's
pipelines batch), mean-pooled over the mask and L2-normalized (all-MiniLM-L6-v2's
embedding, texts cut at its `max_seq_length`, 256, as sentence-transformers and kbert cut
them); tokenization is timed with the model (one batched call of the fast tokenizer,
then `tokenizer.pad` per batch). One warm-up pass, then the best of
`--passes`. Prints one JSON line: {"<set>": {"fp32": seconds, "int8": seconds}, "versions",
"export_seconds", "quantize_seconds"}; writes each path's embeddings of each set to
`--output` (`<set>/<path>`).
"""

import argparse
import json
import os
import tempfile
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="checkpoint directory")
    parser.add_argument("--texts", required=True,
                        help="JSON file: {set name: a list of strings}")
    parser.add_argument("--output", required=True, help=".npz file of the embeddings")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    if args.batch_size < 1 or args.passes < 1:
        parser.error("--batch_size and --passes must be at least 1")

    import numpy as np
    import onnxruntime
    import optimum
    import torch
    import transformers
    from optimum.onnxruntime import ORTModelForFeatureExtraction, ORTQuantizer
    from optimum.onnxruntime.configuration import AutoQuantizationConfig

    transformers.logging.set_verbosity_error()
    with open(args.texts, encoding="utf-8") as f:
        sets = json.load(f)
    tokenizer = transformers.AutoTokenizer.from_pretrained(args.model)
    # sentence-transformers cuts at the checkpoint's max_seq_length (all-MiniLM-L6-v2: 256),
    # as kbert's sentence-embeddings pipeline does.
    max_length = tokenizer.model_max_length
    config = os.path.join(args.model, "sentence_bert_config.json")
    if os.path.isfile(config):
        with open(config, encoding="utf-8") as f:
            max_length = json.load(f).get("max_seq_length", max_length)
    folder = tempfile.mkdtemp(prefix="optimum-serving-")
    start = time.perf_counter()
    model = ORTModelForFeatureExtraction.from_pretrained(args.model, export=True)
    model.save_pretrained(os.path.join(folder, "fp32"))
    export_seconds = time.perf_counter() - start
    start = time.perf_counter()
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    vnni = "avx512_vnni" in flags
    config = (AutoQuantizationConfig.avx512_vnni if vnni else AutoQuantizationConfig.avx2)(
        is_static=False)
    ORTQuantizer.from_pretrained(model).quantize(config, os.path.join(folder, "int8"))
    quantize_seconds = time.perf_counter() - start
    models = {"fp32": model,
              "int8": ORTModelForFeatureExtraction.from_pretrained(os.path.join(folder, "int8"))}

    def embed(model, texts):
        # One batched call of the fast tokenizer, then batches in length order, each padded
        # to its own longest (`tokenizer.pad`).
        encoded = tokenizer(texts, truncation=True, max_length=max_length)
        order = sorted(range(len(texts)), key=lambda i: len(encoded["input_ids"][i]))
        out = [None] * len(texts)
        for begin in range(0, len(texts), args.batch_size):
            rows = order[begin:begin + args.batch_size]
            batch = tokenizer.pad({key: [encoded[key][i] for i in rows] for key in encoded},
                                  return_tensors="pt")
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
            for i, row in zip(rows, pooled.numpy()):
                out[i] = row
        return np.stack(out)

    result, arrays = {}, {}
    with torch.inference_mode():
        for name, texts in sets.items():
            result[name] = {}
            for path, ort_model in models.items():
                arrays[f"{name}/{path}"] = embed(ort_model, texts)  # the warm-up pass
                best = float("inf")
                for _ in range(args.passes):
                    start = time.perf_counter()
                    embed(ort_model, texts)
                    best = min(best, time.perf_counter() - start)
                result[name][path] = best
    np.savez(args.output, **arrays)
    result.update(
        export_seconds=export_seconds, quantize_seconds=quantize_seconds,
        quantization=f"AutoQuantizationConfig.{'avx512_vnni' if vnni else 'avx2'}"
                     f"(is_static=False)",
        versions=f"optimum {optimum.version.__version__}, onnxruntime {onnxruntime.__version__}, "
                 f"transformers {transformers.__version__}, torch {torch.__version__}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
