"""Fine-tuning hooks of the token classifier (`tools/finetune.py --task=token_classifier`):
its data (a CoNLL file or `tfds:conll2003`), features, model, scores (seqeval's entity F1)
and the metric that picks the best epoch. `kbert.training.finetuning_tasks` wires them into
its task record; `config` is its `FinetuningConfig`, read for the fields named here."""

from kbert.tasks.record import Flag
from kbert.tasks.token_classification import TASK, metrics
from kbert.tasks.token_classification.data import encode_tagging, read_conll, read_tfds
from kbert.tasks.token_classification.metrics import entity_scores

# How its batches are cut (`kbert.training.finetuning_tasks`): sentences vary in length;
# labels and logits are per token.
BY_LENGTH = True
PER_TOKEN = True
# --train_data / --validation_data of this task.
DATA = ("conll2003", "CoNLL columns")
TAG_SCHEMES = ("IOB2", "BIO", "IOB1", "BIOES", "IOBES", "BILOU")
# Its flags (`kbert.tasks.record.Flag`).
FLAGS = {
    "word_column": Flag(int, 0, "token_classifier CoNLL files: the 0-based column of the words "
                        "(an integer)."),
    "tag_column": Flag(int, -1, "token_classifier CoNLL files: the column of the tags (an "
                       "integer; -1: the last)."),
    "tag_scheme": Flag(str, "IOB2", "token_classifier: how tags mark entities.",
                       choices=TAG_SCHEMES),
}


def check(config):
    """With --validation_data: the `metrics` extra, which scores every epoch (its ImportError
    now, not after the first epoch)."""
    if config.validation_data:
        metrics.require()

# seqeval's strict schemes by kbert's names; IOB1 and BIO score in its default mode.
_STRICT = {"IOBES": "IOBES", "BIOES": "IOBES"}


def read(config, spec, split, label_names=None):
    """`TaggingData` from 'tfds:NAME' (at `split`) or a CoNLL file (`word_column`,
    `tag_column`; tags indexed by `label_names` where given: the training split's)."""
    if spec.startswith("tfds:"):
        return read_tfds(spec.removeprefix("tfds:"), split=split)
    return read_conll(spec, config.word_column, config.tag_column, label_names=label_names)


def encode(config, data, tokenizer):
    """The split's `EncodedTagging` at `sequence_length`."""
    return encode_tagging(data, tokenizer, config.sequence_length)


def fit_labels(labels):
    """What follows the features in `fit`: the labels and their weights (first pieces)."""
    return labels["labels"], labels["label_weights"]


def build(config, backbone, train):
    """A `TokenClassifier` on `backbone` with the training split's tag names."""
    return TASK.build(backbone, label_names=train.label_names)


def scores(config, split, predictions):
    """Entity precision, recall and F1 of `predictions` (the model's logits on `split`):
    each word's tag at its first piece (O where none), by seqeval: in its default mode for
    `config.tag_scheme` IOB1 / BIO, else strict with that scheme (BIOES read as IOBES)."""
    predicted = split.encoded.word_predictions(predictions)
    names = split.label_names
    gold, found = [], []
    for example, tags in zip(split.data.examples, predicted):
        gold.append([names[t] for t in example.tags])
        found.append([tag if tag is not None else "O" for tag in tags])
    scheme = None if config.tag_scheme in ("IOB1", "BIO") else config.tag_scheme
    scheme = _STRICT.get(scheme, scheme)
    result = entity_scores(gold, found, scheme=scheme)
    return {"precision": result["precision"], "recall": result["recall"], "f1": result["f1"]}


def metric(config, train):
    """The metric that picks the best epoch: entity F1."""
    return "f1"


# The tag schemes whose entities transformers' "simple" grouping reads (B- / I- prefixes).
_GROUPED = ("IOB1", "IOB2", "BIO")


def export_options(config, train):
    """The pipeline options fixed in `--export_dir`'s SavedModel (`model.export`): entities
    grouped as transformers' "simple" strategy groups them for the B-/I- schemes; for
    BIOES, IOBES and BILOU, whose E-/S-/L-/U- tags that grouping does not read, every token
    with its tag ("none"), for the client to group."""
    return {"aggregation_strategy": "simple" if config.tag_scheme in _GROUPED else "none"}
