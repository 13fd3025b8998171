"""Learns a vocabulary from a corpus: a WordPiece vocab.txt, a SentencePiece spiece.model or
a byte-level BPE vocab.json + merges.txt.

    kbert-build-vocab --input=stdlib --learned_vocabulary_size=8000 --output=vocab.txt
    kbert-build-vocab --type=sentencepiece --input='corpus/*.txt.gz' \\
        --learned_vocabulary_size=30000 --output=spiece.model
    kbert-build-vocab --type=bpe --nolowercase --input='corpus/*.txt.gz' \\
        --learned_vocabulary_size=50265 --output=bpe/vocab.json

--type=wordpiece (tensorflow-text's learner) starts with [PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3,
[MASK]=4; --type=sentencepiece (the sentencepiece package's trainer, ALBERT's settings) with
<pad>=0, <unk>=1, [CLS]=2, [SEP]=3, [MASK]=4; --type=bpe (the tokenizers package's trainer,
GPT-2 / RoBERTa's byte-level BPE) with <s>=0, <pad>=1, </s>=2, <unk>=3, <mask>=4, then the 256
byte symbols and the merges: --output names the vocab.json, merges.txt is written beside it.
kbert-pretrain --vocab_file takes any of them (a .model file is SentencePiece, a .json one
byte-level BPE).

From a clone, `python tools/build_vocab.py` runs the same program with the same flags.
"""

import time

from kbert import programs
from kbert.programs.quiet import import_tensorflow_quietly

import_tensorflow_quietly()  # first: keeps TensorFlow's C++ start-up log quiet

from absl import app, flags, logging  # noqa: E402

from kbert.data import inputs  # noqa: E402
from kbert.tokenizers import tokenizer_types  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_enum("type", "wordpiece", list(tokenizer_types.TOKENIZER_TYPES),
                  "Kind of vocabulary: " + "; ".join(
                      f"{k.name}: {k.description}, written as {k.file_name}"
                      for k in tokenizer_types.TOKENIZER_TYPES.values()) + ".")
flags.DEFINE_string("input", None, f"Corpus: {inputs.INPUT_HELP}.")
flags.DEFINE_integer("learned_vocabulary_size", 30522,
                     "Target vocabulary size, special tokens included (an integer >= 1).")
flags.DEFINE_alias("vocab_size", "learned_vocabulary_size")  # deprecated name
flags.DEFINE_string("output", None, "Path of the file to write (vocab.txt, spiece.model, "
                    "vocab.json: --type=bpe writes merges.txt beside it).")
flags.DEFINE_bool("lowercase", None, "Lower-case and strip accents (uncased models); "
                  "default: true for wordpiece and sentencepiece, false for bpe (RoBERTa's "
                  "is cased; --lowercase lower-cases a BPE, its accents stay).")
flags.DEFINE_integer("max_sentences", None, "Learn from the first N sentences only.")
flags.mark_flags_as_required(["input", "output"])


def main(argv):
    del argv
    try:
        documents = inputs.documents(FLAGS.input)
    except (FileNotFoundError, ValueError) as e:
        raise app.UsageError(f"--input: {e}")
    kind = tokenizer_types.get(FLAGS.type)
    lowercase = kind.lowercase if FLAGS.lowercase is None else FLAGS.lowercase
    start = time.time()
    logging.info("Learning a %s vocabulary of about %d tokens from %s ...", kind.name,
                 FLAGS.learned_vocabulary_size, FLAGS.input)
    try:
        tokenizer_types.learn(kind.name, documents, FLAGS.output, FLAGS.learned_vocabulary_size,
                              lowercase=lowercase, max_sentences=FLAGS.max_sentences)
    except ValueError as e:
        raise app.UsageError(str(e))
    tokenizer = tokenizer_types.load(FLAGS.output, kind.name, lowercase=lowercase)
    print(f"Wrote a {kind.name} vocabulary of {tokenizer.vocabulary_size} tokens to "
          f"{' and '.join(tokenizer_types.files(FLAGS.output, kind.name))} in "
          f"{time.time() - start:.0f} s.")


def run():
    """The console entry point `kbert-build-vocab`."""
    programs.run(main, __doc__)

