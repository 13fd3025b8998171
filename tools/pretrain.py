"""Pretrains a kbert preset and exports it: the main job of the package.

    python tools/pretrain.py --flagfile=tools/flags/quickstart.flags
    python tools/pretrain.py --preset=bert_base --input='corpus/*.txt' --vocab=vocab.txt \\
        --model_dir=runs/base --train_steps=100000 --global_batch_size=256

Every flag is a field of `kbert.training.PretrainingConfig` (same name), so Python code can
do what this program does. Running the same command again resumes from the newest checkpoint
in --model_dir.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags, logging  # noqa: E402

from kbert.data.inputs import INPUT_HELP  # noqa: E402

FLAGS = flags.FLAGS
# === Model ===
flags.DEFINE_string("preset", "bert_tiny", "kbert preset to pretrain (kbert.presets.list()).")
flags.DEFINE_alias("model", "preset")
flags.DEFINE_multi_string("config_override", [],
                          "Architecture field override KEY=VALUE (JSON value), repeatable, "
                          "e.g. --config_override=dropout=0.0.")
flags.DEFINE_string("init_checkpoint", None,
                    "Start the model weights from this run's model_dir or checkpoint "
                    "(e.g. phase 2 from phase 1); ignored when resuming.")
# === Data ===
flags.DEFINE_string("input", "stdlib",
                    f"Corpus: {INPUT_HELP}; or 'tfrecord:GLOB' for original-format TFRecords.")
flags.DEFINE_string("vocab", None, "WordPiece vocab.txt; unset: learn one into model_dir.")
flags.DEFINE_integer("vocab_size", 8000, "Target size of a learned vocabulary.")
flags.DEFINE_bool("lowercase", True, "Lower-case and strip accents (uncased).")
flags.DEFINE_integer("sequence_length", 128, "Tokens per example.")
flags.DEFINE_integer("max_predictions", 20, "Masked positions per example.")
flags.DEFINE_enum("objective", "mlm_nsp", ["mlm", "mlm_nsp", "mlm_sop", "rtd", "distill"],
                  "Pretraining objective: masked LM alone, with next-sentence prediction, "
                  "with sentence-order prediction (ALBERT), ELECTRA's replaced-token "
                  "detection (rtd, ELECTRA presets), or distillation from --teacher.")
flags.DEFINE_enum("masking", "token", ["token", "word", "ngram"],
                  "Masking unit: tokens, whole words, or n-grams of 1-3 whole words.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Fraction of tokens to predict.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter target length.")
# === ELECTRA (--objective=rtd) ===
flags.DEFINE_float("generator_hidden_fraction", 0.25,
                   "Generator width as a fraction of the discriminator's, in (0, 1].")
flags.DEFINE_float("mlm_loss_weight", 1.0, "Weight of the generator's masked-LM loss.")
flags.DEFINE_float("rtd_loss_weight", 50.0, "Weight of the replaced-token-detection loss.")
# === Distillation (--objective=distill) ===
flags.DEFINE_string("teacher", None,
                    "Teacher of --objective=distill: a kbert run's --model_dir, a preset name "
                    "(its pretrained release) or a checkpoint directory (Hugging Face, TF1, "
                    "keras-hub, kbert). The student (--preset) uses its vocabulary.")
flags.DEFINE_float("temperature", 2.0, "Softmax temperature of the distillation KL.")
flags.DEFINE_float("distill_kl_weight", 5.0, "Weight of the KL to the teacher (x T^2).")
flags.DEFINE_float("distill_mlm_weight", 2.0, "Weight of the student's masked-LM loss.")
flags.DEFINE_float("distill_cosine_weight", 1.0,
                   "Weight of the cosine loss between student and teacher hidden states.")
flags.DEFINE_bool("init_student", True,
                  "Start the student from the teacher's embeddings, layers and MLM head.")
flags.DEFINE_list("student_layers", None,
                  "Teacher layer of each student layer, e.g. 0,2,4,7,9,11 (default: spread "
                  "evenly, which is that for 6 of 12).")
# === Schedule ===
flags.DEFINE_integer("global_batch_size", 32, "Sequences per step over all replicas.")
flags.DEFINE_integer("train_steps", None, "Training steps (give this or --epochs).")
flags.DEFINE_integer("epochs", None, "Passes over the data (give this or --train_steps).")
flags.DEFINE_integer("steps_per_loop", 100, "Steps between checkpoints and log lines.")
flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "Optimizer.")
flags.DEFINE_float("learning_rate", 1e-4, "Peak learning rate.")
flags.DEFINE_integer("warmup_steps", 0, "Linear warm-up steps.")
flags.DEFINE_enum("decay", "linear", ["linear", "polynomial", "constant"], "Decay after warm-up.")
flags.DEFINE_float("power", 1.0, "Power of the polynomial decay.")
flags.DEFINE_float("end_learning_rate", 0.0, "Learning rate at the last step.")
flags.DEFINE_float("weight_decay", 0.01, "Decoupled weight decay (not on LayerNorm or biases).")
flags.DEFINE_float("clipnorm", 1.0, "Global gradient-norm clipping (0: off).")
flags.DEFINE_integer("gradient_accumulation_steps", 1, "Batches per optimizer update.")
# === Hardware ===
flags.DEFINE_enum("precision", "float32", ["float32", "mixed_bfloat16", "mixed_float16"],
                  "Keras dtype policy (mixed_float16 scales the loss).")
flags.DEFINE_bool("jit_compile", True, "Compile the train step with XLA.")
flags.DEFINE_integer("steps_per_execution", 1, "Steps per tf.function call.")
flags.DEFINE_enum("strategy", "default", ["default", "mirrored", "multi_worker", "tpu"],
                  "tf.distribute strategy (multi_worker reads TF_CONFIG).")
flags.DEFINE_string("tpu", "", "TPU for --strategy=tpu: 'local' on a TPU VM (Colab's TPU "
                    "runtime), else its name or grpc:// address ('' reads $TPU_NAME or "
                    "$COLAB_TPU_ADDR).")
# === Output ===
flags.DEFINE_string("model_dir", None, "Checkpoints, TensorBoard logs, vocab.txt, config.json.")
flags.DEFINE_string("export_dir", None, "Export the backbone SavedModel here at the end.")
flags.DEFINE_integer("seed", 0, "Seed of every random choice (data, masks, init, dropout).")
flags.DEFINE_integer("verbose", 1, "Keras verbosity: 1 progress bar, 2 one line per loop.")
flags.DEFINE_bool("dry_run", False, "Check the flags, print the resolved config, and stop.")
flags.mark_flag_as_required("model_dir")


def _layers(values):
    if values is None:
        return None
    try:
        return [int(v) for v in values]
    except ValueError:
        raise app.UsageError(f"--student_layers={','.join(values)}: expected integers.")


def config_from_flags():
    from kbert.training import PretrainingConfig

    overrides = {}
    for item in FLAGS.config_override:
        key, sep, value = item.partition("=")
        if not sep:
            raise app.UsageError(f"--config_override={item!r} is not KEY=VALUE.")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value
    train_steps = FLAGS.train_steps
    if train_steps is None and FLAGS.epochs is None:
        train_steps = 1000
    return PretrainingConfig(
        model_dir=FLAGS.model_dir, preset=FLAGS.preset, config_overrides=overrides,
        input=FLAGS.input, vocab=FLAGS.vocab, vocab_size=FLAGS.vocab_size,
        lowercase=FLAGS.lowercase, sequence_length=FLAGS.sequence_length,
        max_predictions=FLAGS.max_predictions, objective=FLAGS.objective,
        masking=FLAGS.masking, masked_lm_prob=FLAGS.masked_lm_prob,
        short_seq_prob=FLAGS.short_seq_prob,
        generator_hidden_fraction=FLAGS.generator_hidden_fraction,
        mlm_loss_weight=FLAGS.mlm_loss_weight, rtd_loss_weight=FLAGS.rtd_loss_weight,
        teacher=FLAGS.teacher, temperature=FLAGS.temperature,
        distill_kl_weight=FLAGS.distill_kl_weight, distill_mlm_weight=FLAGS.distill_mlm_weight,
        distill_cosine_weight=FLAGS.distill_cosine_weight, init_student=FLAGS.init_student,
        student_layers=_layers(FLAGS.student_layers),
        global_batch_size=FLAGS.global_batch_size,
        train_steps=train_steps, epochs=FLAGS.epochs, steps_per_loop=FLAGS.steps_per_loop,
        optimizer=FLAGS.optimizer, learning_rate=FLAGS.learning_rate,
        warmup_steps=FLAGS.warmup_steps, decay=FLAGS.decay, power=FLAGS.power,
        end_learning_rate=FLAGS.end_learning_rate, weight_decay=FLAGS.weight_decay,
        clipnorm=FLAGS.clipnorm or None,
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        precision=FLAGS.precision, jit_compile=FLAGS.jit_compile,
        steps_per_execution=FLAGS.steps_per_execution, strategy=FLAGS.strategy, tpu=FLAGS.tpu,
        init_checkpoint=FLAGS.init_checkpoint, export_dir=FLAGS.export_dir, seed=FLAGS.seed,
        verbose=FLAGS.verbose,
    )


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    from kbert.training import run_pretraining
    from kbert.training.pretraining import ConfigError

    # TensorFlow's INFO lines (one per checkpoint) would break the progress bar.
    logging.set_verbosity(logging.WARNING)
    config = config_from_flags()
    try:
        if FLAGS.dry_run:
            import dataclasses

            config.validate()
            print(json.dumps(dataclasses.asdict(config), indent=2))
            return
        run_pretraining(config)  # validates the config first
    except ConfigError as e:  # a bad flag; any other error keeps its traceback
        raise app.UsageError(str(e))
    except FloatingPointError as e:
        raise SystemExit(f"Error: {e}")


if __name__ == "__main__":
    app.run(main)
