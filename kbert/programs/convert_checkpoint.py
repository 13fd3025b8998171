"""Converts a BERT, ALBERT, DistilBERT or ELECTRA checkpoint between formats, fine-tuned
task models too.

    kbert-convert --from=tf1 --to=kbert \
        --input=uncased_L-12_H-768_A-12 --output=bert_base_kbert
    kbert-convert --from=hf --to=hf --input=my_model --output=copy
    kbert-convert --to=hf --input=keras_hub_preset --output=bert_hf
    kbert-convert --to=kbert --input=distilbert-sst2 --output=sst2_kbert
    kbert-convert --to=hf --input=my_finetuned_kbert --output=for_the_hub

--from: hf (config.json + model.safetensors or pytorch_model.bin), tf1 (Google's original
releases: bert_model.ckpt.* + bert_config.json, ALBERT's model.ckpt-best.* + albert_config.json,
ELECTRA's checkpoint + vocab.txt), keras_hub (a preset directory), kbert (model.keras), or
auto (the default: detected). --to: kbert (model.keras + vocab.txt) or hf.

A fine-tuned checkpoint (a Hugging Face *ForSequenceClassification, *ForTokenClassification or
*ForQuestionAnswering, a sentence-transformers directory, a kbert task model) converts as its
task model, labels and problem type included: --to=hf writes transformers' class of it (or a
sentence-transformers directory for an embedder); --to=kbert saves the kbert task model, or
only its encoder with --head=none.

From a clone, `python tools/convert_checkpoint.py` runs the same program with the same flags.
"""

import os
import time

from kbert import programs
from kbert.programs.quiet import import_tensorflow_quietly

import_tensorflow_quietly()  # first: keeps TensorFlow's C++ start-up log quiet

from absl import app, flags, logging  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_enum("from", "auto", ["auto", "hf", "tf1", "keras_hub", "kbert"],
                  "Format of --input; auto detects it.")
flags.DEFINE_enum("to", None, ["kbert", "hf"], "Format to write.")
flags.DEFINE_string("input", None, "Checkpoint directory (or a TF1 checkpoint prefix).")
flags.DEFINE_string("output", None, "Directory to write; must not exist or be empty.")
flags.DEFINE_string("config", None, "tf1 only: bert_config.json (albert_config.json) when it "
                    "is not next to the checkpoint.")
flags.DEFINE_enum("head", "auto", ["auto", "pretrainer", "mlm", "none"],
                  "--to=kbert only: the heads of the saved model; auto keeps every head the "
                  "checkpoint has (a fine-tuned checkpoint's task head), none saves the "
                  "encoder.")
flags.mark_flags_as_required(["to", "input", "output"])


def main(argv):
    del argv
    from kbert import convert
    from kbert.convert import hugging_face, kbert_format

    source_format = FLAGS["from"].value
    if FLAGS.config and source_format not in ("tf1", "auto"):
        raise app.UsageError(f"--config is for --from=tf1, not --from={source_format}.")
    if FLAGS.head != "auto" and FLAGS.to != "kbert":
        raise app.UsageError("--head applies to --to=kbert; --to=hf keeps every head.")
    if os.path.isdir(FLAGS.output) and os.listdir(FLAGS.output):
        raise app.UsageError(f"--output={FLAGS.output} exists and is not empty.")
    start = time.time()
    try:
        if source_format == "auto":
            source_format = convert.detect_format(FLAGS.input)
        kwargs = {"config_path": FLAGS.config} if FLAGS.config else {}
        if kwargs and source_format != "tf1":
            raise ValueError(f"--config is for tf1 checkpoints; {FLAGS.input} is {source_format}.")
        logging.info("Reading %s (%s) ...", FLAGS.input, source_format)
        checkpoint = convert.read(FLAGS.input, format=source_format, **kwargs)
    except (FileNotFoundError, ValueError) as e:
        raise app.UsageError(f"--input: {e}")
    logging.info("Writing %s (%s) ...", FLAGS.output, FLAGS.to)
    try:
        if FLAGS.to == "hf":
            hugging_face.write(checkpoint, FLAGS.output)
        else:
            head = None if FLAGS.head == "none" else FLAGS.head
            kbert_format.write(checkpoint, FLAGS.output, head=head)
    except ValueError as e:
        raise app.UsageError(f"--to={FLAGS.to}: {e}")
    config = checkpoint.config
    task = checkpoint.task
    if task is not None and not (FLAGS.to == "kbert" and FLAGS.head == "none"):
        labels = f", labels {', '.join(task.label_names)}" if task.label_names else ""
        kind = f"task: {task.task} ({task.architecture}{labels})"
    else:
        kind = f"heads: {(checkpoint.head if FLAGS.head == 'auto' else FLAGS.head) or 'none'}"
    print(f"Converted {FLAGS.input} ({source_format}: {checkpoint.family}, "
          f"{config.num_layers} layers, hidden {config.hidden_size}, {kind}) to "
          f"{FLAGS.output} ({FLAGS.to}) in {time.time() - start:.0f} s.")


def run():
    """The console entry point `kbert-convert`."""
    programs.run(main, __doc__)

