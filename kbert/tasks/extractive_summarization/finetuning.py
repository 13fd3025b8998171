"""Extractive summarization's fine-tuning hooks (`tools/finetune.py
--task=extractive_summarizer`): its data (`tfds:cnn_dailymail`, or a CSV/TSV/JSONL file whose
--text_column is the document and --label_column the reference summary), its rows and oracle
labels, its model, its ROUGE scores and the metric that picks the best epoch. `config` is a
`kbert.training.FinetuningConfig` (read by its fields)."""

from kbert.tasks.extractive_summarization import TASK, decode, metrics
from kbert.tasks.extractive_summarization.data import read_summaries_file, read_tfds
from kbert.tasks.extractive_summarization.features import encode_summaries
from kbert.tasks.record import Flag
from kbert.tasks.text_classification.finetuning import _column

# How its batches are cut (`kbert.training.finetuning_tasks`): documents vary in length (a
# window holds the sentences that fit); labels and logits are per position.
BY_LENGTH = True
PER_TOKEN = True
# --train_data / --validation_data of this task (its file columns: text_classification's).
DATA = ("cnn_dailymail", "CSV/TSV/JSONL")
# Its flags (`kbert.tasks.record.Flag`).
FLAGS = {
    "summary_windows": Flag(
        str, "first", "extractive_summarizer: what of a document longer than "
        "--sequence_length is scored: first (BERTSum's: the sentences that fit, every position "
        "the token's place in the document) or all (windows of whole sentences, their "
        "positions from 0 again; every sentence can be chosen).", choices=("first", "all")),
    "summary_segments": Flag(
        str, "sentence", "extractive_summarizer: what the segment ids alternate by: sentence "
        "(BERTSum's interval segments) or paragraph (each paragraph's sentences share its id, "
        "so the model sees where paragraphs end; blank lines end them).",
        choices=("sentence", "paragraph")),
    "summary_labels": Flag(
        str, "oracle", "extractive_summarizer: training targets: oracle (BERTSum's: 1 for the "
        "sentences of the greedy ROUGE oracle, 0 for the others) or rouge (soft: each "
        "sentence's own ROUGE-1 + ROUGE-2 F against the reference, over the document's best).",
        choices=("oracle", "rouge")),
}


def check(config):
    """Nothing beyond each flag's own check."""


def read(config, spec, split, label_names=None):
    """`SummaryData` of 'tfds:cnn_dailymail' (at `split`) or of a file (the document in
    --text_column, the reference summary in --label_column)."""
    if spec.startswith("tfds:"):
        return read_tfds(spec.removeprefix("tfds:"), split=split)
    return read_summaries_file(spec, _column(config.text_column), _column(config.label_column))


def encode(config, data, tokenizer):
    """Windows of --sequence_length (--summary_windows: the first or all; segment ids by
    --summary_segments) with their labels (--summary_labels: the greedy oracle's, or each
    sentence's ROUGE), encoded once."""
    return encode_summaries(data, tokenizer, config.sequence_length,
                            which=config.summary_windows, labels=config.summary_labels,
                            segments=config.summary_segments)


def fit_labels(labels):
    """What follows the features in `fit`: the labels and their weights (the [CLS] of each
    sentence)."""
    return labels["labels"], labels["label_weights"]


def build(config, backbone, train):
    return TASK.build(backbone, windows=config.summary_windows,
                      segments=config.summary_segments)


def summaries(split, logits, count=decode.DEFAULT_SENTENCES):
    """The summary text of each example of the prepared `split` from the model's logits."""
    out = []
    for example, scores in zip(split.data.examples, split.encoded.sentence_scores(logits)):
        # The scored sentences: the first ones (all unless --summary_windows=first).
        chosen = decode.select([s.text for s in example.sentences[:len(scores)]], scores,
                               count)
        out.append("\n".join(example.sentences[i].text for i in chosen))
    return out


def scores(config, split, logits):
    """ROUGE-1/2/L F1 (rouge-score) of the 3 best sentences with trigram blocking against
    the reference summaries."""
    return metrics.rouge_scores(summaries(split, logits),
                                [example.summary for example in split.data.examples])


def metric(config, train):
    """The metric that picks the best epoch: ROUGE-2."""
    return "rouge2"


def export_options(config, train):
    """The pipeline options fixed in `--export_dir`'s SavedModel (`model.export`): none."""
    return {}
