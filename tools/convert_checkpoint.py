"""Converts a BERT, ALBERT, DistilBERT or ELECTRA checkpoint between formats.

    python tools/convert_checkpoint.py --from=tf1 --to=kbert \
        --input=uncased_L-12_H-768_A-12 --output=bert_base_kbert
    python tools/convert_checkpoint.py --from=hf --to=hf --input=my_model --output=copy
    python tools/convert_checkpoint.py --to=hf --input=keras_hub_preset --output=bert_hf

--from: hf (config.json + model.safetensors or pytorch_model.bin), tf1 (Google's original
releases: bert_model.ckpt.* + bert_config.json, ALBERT's model.ckpt-best.* + albert_config.json,
ELECTRA's checkpoint + vocab.txt), keras_hub (a preset directory), kbert (model.keras), or
auto (the default: detected). --to: kbert (model.keras + vocab.txt) or hf.
"""

import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

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
                  "checkpoint has.")
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
    if FLAGS.to == "hf":
        hugging_face.write(checkpoint, FLAGS.output)
    else:
        head = None if FLAGS.head == "none" else FLAGS.head
        kbert_format.write(checkpoint, FLAGS.output, head=head)
    config = checkpoint.config
    print(f"Converted {FLAGS.input} ({source_format}: {checkpoint.family}, "
          f"{config.num_layers} layers, hidden {config.hidden_size}, heads: "
          f"{checkpoint.head or 'none'}) to {FLAGS.output} ({FLAGS.to}) in "
          f"{time.time() - start:.0f} s.")


if __name__ == "__main__":
    app.run(main)
