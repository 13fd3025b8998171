"""`tools/benchmark.py gpu`: a BERT masked-LM train step under JAX, where TensorFlow need not
be installed (the lent device machines have JAX and PyTorch only).

    KERAS_BACKEND=jax python tools/benchmark.py gpu [--gpu_lengths=128,512]
        [--gpu_batch_size=32] [--gpu_dtype=mixed_bfloat16] [--gpu_size=base] [--steps=10]
        [--rounds=5]

kbert's `BertPretrainer` (masked LM only, `--predictions` masked positions per sequence)
and, where it imports and runs, keras-hub's `BertMaskedLM` on the same architecture (BERT-base
by default: 12 layers, hidden 768, 12 heads, vocabulary 30,522), the same AdamW, the same
random batch, XLA (jit) on both. kbert's attention goes through
`keras.ops.dot_product_attention` (cuDNN's fused kernel under JAX on a GPU, where the shapes
and dtype allow). After a compiling step and a warm-up, the models take turns for `--rounds`
rounds of `--steps` steps; the best round gives sequences/s. MFU: the model's training FLOPs
(6 x the dense multiply-adds per token, plus the attention's 12 x L x S x H per token, plus the
MLM head on the predictions) per second, over the device's dense peak for the dtype (a table
of NVIDIA's data-sheet figures; "n/a" for a device not in it, such as a CPU).

The modern recipe's step beside them ("kbert ModernBERT modern"): kbert's
`ModernBertPretrainer` on packed rows (four documents a row, each attending only to itself:
`document_ids`, as `--separate_documents`) with 30% of the tokens predicted, on a ModernBERT
of the same depth, width and heads (a GLU feed-forward of two thirds the width: the same
multiply-adds; a 128-token window in two layers of three). Its FLOPs are counted by the same
formula with its predictions (the window layers' attention counted whole).

Printed: a table of sequence length, contestant, ms per step, sequences/s, TFLOP/s, MFU, and
the ratio kbert / keras-hub.
"""

import os
import time

# Dense (not sparse) peak TFLOP/s by the device kind JAX reports, from NVIDIA's data sheets.
PEAKS = {"H200": {"bfloat16": 989.4, "float32": 494.7},
         "H100": {"bfloat16": 989.4, "float32": 494.7},  # SXM; tf32 for float32 matmuls
         "A100": {"bfloat16": 312.0, "float32": 156.0},
         "L4": {"bfloat16": 121.0, "float32": 60.0}}
SIZES = {"base": dict(num_layers=12, hidden_size=768, num_heads=12, intermediate_size=3072,
                      vocabulary_size=30522),
         "tiny": dict(num_layers=2, hidden_size=64, num_heads=2, intermediate_size=128,
                      vocabulary_size=1000)}


def peak(device_kind, dtype):
    """The device's dense peak TFLOP/s for `dtype` (its compute dtype), or None."""
    compute = "bfloat16" if "bfloat16" in dtype else "float32"
    for name, peaks in PEAKS.items():
        if name in device_kind.upper():
            return peaks[compute]
    return None


def train_flops(size, length, predictions):
    """Training FLOPs of one sequence: 3 x (forward) for forward + backward, forward =
    2 x multiply-adds: the blocks' dense layers (4H^2 + 2HI per token per layer), attention's
    two S x S products (2 x S x H per token per layer) and the MLM head on the predictions
    (H^2 + H x V each)."""
    h, i, layers, v = (size["hidden_size"], size["intermediate_size"], size["num_layers"],
                       size["vocabulary_size"])
    per_token = layers * (4 * h * h + 2 * h * i + 2 * length * h)
    forward = 2 * (length * per_token + predictions * (h * h + h * v))
    return 3 * forward


def batch(size, batch_size, length, predictions, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    vocabulary = size["vocabulary_size"]
    features = {
        "token_ids": rng.integers(5, vocabulary, (batch_size, length)).astype("int32"),
        "segment_ids": (np.arange(length)[None] >= length // 2).repeat(batch_size, 0)
        .astype("int32"),
        "padding_mask": np.ones((batch_size, length), "int32"),
        "mask_positions": np.sort(np.stack([rng.choice(length, predictions, replace=False)
                                            for _ in range(batch_size)]), 1).astype("int32"),
    }
    labels = {"mask_ids": rng.integers(5, vocabulary, (batch_size, predictions)).astype("int32"),
              "mask_weights": np.ones((batch_size, predictions), "float32")}
    return features, labels


MODERN = "kbert ModernBERT modern"
MODERN_RATE = 0.3
DOCUMENTS_PER_ROW = 4


def modern_predictions(length):
    """Masked positions of a row of the modern recipe: 30% of its tokens."""
    return max(1, int(round(MODERN_RATE * length)))


def modern_batch(size, batch_size, length, seed=0):
    """A random batch of packed rows: `DOCUMENTS_PER_ROW` documents of equal length a row
    (`document_ids` 1, 2, ...), 30% of the positions masked."""
    import numpy as np

    features, labels = batch(size, batch_size, length, modern_predictions(length), seed)
    del features["segment_ids"]  # ModernBERT has no segment embeddings
    piece = -(-length // DOCUMENTS_PER_ROW)
    features["document_ids"] = np.repeat(
        (np.arange(length) // piece + 1)[None], batch_size, 0).astype("int32")
    return features, labels


def contestants(size, length, dtype):
    """[(name, model, kind)]: kbert's masked-LM pretrainer, keras-hub's where it imports (a
    skip reason printed otherwise), and kbert's ModernBERT on the modern recipe's rows."""
    import keras

    from kbert import models

    keras.config.set_dtype_policy(dtype)
    config = models.FAMILIES["bert"].config(**size, max_sequence_length=max(length, 512))
    backbone = models.FAMILIES["bert"].backbone.from_config(config)
    out = [("kbert", models.BertPretrainer(backbone, next_sentence_prediction=False), "kbert")]
    try:
        import keras_hub

        hub_backbone = keras_hub.models.BertBackbone(
            vocabulary_size=size["vocabulary_size"], num_layers=size["num_layers"],
            num_heads=size["num_heads"], hidden_dim=size["hidden_size"],
            intermediate_dim=size["intermediate_size"], max_sequence_length=max(length, 512))
        out.append(("keras-hub", keras_hub.models.BertMaskedLM(hub_backbone,
                                                                preprocessor=None), "hub"))
    except Exception as error:  # keras-hub absent, or needing TensorFlow: the row is skipped
        print(f"  keras-hub BertMaskedLM: skipped ({type(error).__name__}: {error})")
    modern = models.FAMILIES["modern_bert"].config(
        **dict(size, intermediate_size=size["intermediate_size"] * 2 // 3),
        max_sequence_length=max(length, 512), local_attention=128, global_attn_every_n_layers=3)
    out.append((MODERN, models.ModernBertPretrainer(
        models.FAMILIES["modern_bert"].backbone.from_config(modern), document_ids=True),
        "modern"))
    return out


def _fit_args(kind, batches):
    features, labels = batches[kind == "modern"]
    if kind in ("kbert", "modern"):
        return features, labels, None
    return features, labels["mask_ids"], labels["mask_weights"]


def run(lengths, batch_size, dtype, size_name, steps, rounds, predictions):
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import jax
    import keras

    if keras.backend.backend() != "jax":
        raise SystemExit(f"gpu: run under KERAS_BACKEND=jax (Keras is on "
                         f"{keras.backend.backend()!r}).")
    device = jax.devices()[0]
    size = SIZES[size_name]
    top = peak(device.device_kind, dtype)
    print(f"gpu: {device.device_kind} ({device.platform}), JAX {jax.__version__}, Keras "
          f"{keras.__version__}, {dtype}, BERT-{size_name} masked LM, batch {batch_size}, "
          f"{predictions} predictions; peak {top or 'n/a'} TFLOP/s", flush=True)
    rows = []
    for length in lengths:
        batches = (batch(size, batch_size, length, predictions),
                   modern_batch(size, batch_size, length))
        timed, kinds = {}, {}
        entries = contestants(size, length, dtype)
        for name, model, kind in entries:
            model.compile(optimizer=keras.optimizers.AdamW(1e-4), jit_compile=True)
            x, y, w = _fit_args(kind, batches)
            for _ in range(3):  # compiles, then warms up
                model.train_on_batch(x, y, sample_weight=w)
            timed[name], kinds[name] = [], kind
        for _ in range(rounds):
            for name, model, kind in entries:
                x, y, w = _fit_args(kind, batches)
                start = time.perf_counter()
                for _ in range(steps):
                    logs = model.train_on_batch(x, y, sample_weight=w, return_dict=True)
                jax.block_until_ready(logs)
                timed[name].append((time.perf_counter() - start) / steps)
        for name, seconds in timed.items():
            masked = modern_predictions(length) if kinds[name] == "modern" else predictions
            flops = train_flops(size, length, masked) * batch_size
            best = min(seconds)
            tflops = flops / best / 1e12
            rows.append((length, name, best * 1e3, batch_size / best, tflops,
                         tflops / top if top else None))
        keras.backend.clear_session()
    print("\n| length | model | ms/step | sequences/s | TFLOP/s | MFU |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    for length, name, ms, rate, tflops, mfu in rows:
        mfu_text = f"{mfu:.1%}" if mfu is not None else "n/a"
        print(f"| {length} | {name} | {ms:.1f} | {rate:.1f} | {tflops:.1f} | {mfu_text} |")
    for length in lengths:
        by = {name: rate for l, name, _, rate, _, _ in rows if l == length}
        if "keras-hub" in by:
            print(f"length {length}: kbert / keras-hub sequences/s "
                  f"{by['kbert'] / by['keras-hub']:.2f}")
    return {"device": device.device_kind, "dtype": dtype, "size": size_name,
            "batch_size": batch_size,
            "rows": [{"length": length, "model": name, "ms_per_step": ms,
                      "sequences_per_second": rate, "tflops": tflops, "mfu": mfu}
                     for length, name, ms, rate, tflops, mfu in rows]}
