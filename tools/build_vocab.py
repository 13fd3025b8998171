"""Learns a WordPiece vocab.txt from a corpus.

    python tools/build_vocab.py --input=stdlib --learned_vocabulary_size=8000 --output=vocab.txt
    python tools/build_vocab.py --input='corpus/*.txt.gz' --learned_vocabulary_size=30522 --output=vocab.txt

The vocabulary starts with [PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3, [MASK]=4.
"""

import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags, logging  # noqa: E402

from kbert.data import inputs  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("input", None, f"Corpus: {inputs.INPUT_HELP}.")
flags.DEFINE_integer("learned_vocabulary_size", 30522,
                     "Target vocabulary size, special tokens included (an integer >= 1).")
flags.DEFINE_alias("vocab_size", "learned_vocabulary_size")  # deprecated name
flags.DEFINE_string("output", None, "Path of the vocab.txt to write.")
flags.DEFINE_bool("lowercase", True, "Lower-case and strip accents (uncased models).")
flags.DEFINE_integer("max_sentences", None, "Learn from the first N sentences only.")
flags.mark_flags_as_required(["input", "output"])


def main(argv):
    del argv
    from kbert.tokenizers.vocab_learning import learn_vocabulary, write_vocabulary

    try:
        documents = inputs.documents(FLAGS.input)
    except (FileNotFoundError, ValueError) as e:
        raise app.UsageError(f"--input: {e}")
    start = time.time()
    logging.info("Learning a WordPiece vocabulary of about %d tokens from %s ...",
                 FLAGS.learned_vocabulary_size, FLAGS.input)
    vocabulary = learn_vocabulary(
        documents, FLAGS.learned_vocabulary_size, lowercase=FLAGS.lowercase, max_sentences=FLAGS.max_sentences
    )
    write_vocabulary(vocabulary, FLAGS.output)
    print(f"Wrote {len(vocabulary)} tokens to {FLAGS.output} in {time.time() - start:.0f} s.")


if __name__ == "__main__":
    app.run(main)
