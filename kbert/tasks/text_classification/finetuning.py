"""Text classification's fine-tuning hooks (`tools/finetune.py --task=text_classifier`): its
data, its model, its scores and the metric that picks the best epoch. `config` is a
`kbert.training.FinetuningConfig` (read by its fields: this module does not import
`kbert.training`)."""

from typing import Optional

import numpy as np

from kbert.tasks.record import Flag
from kbert.tasks.text_classification import data, features, metrics
from kbert.tasks.text_classification.model import TextClassifier

# How its batches are cut (`kbert.training.finetuning_tasks`): texts vary in length; one
# label per text.
BY_LENGTH = True
PER_TOKEN = False
# --train_data / --validation_data of this task.
DATA = ("glue/sst2, glue/mrpc, glue/mnli, glue/stsb, glue/cola", "CSV/TSV/JSONL")
# Its flags (`kbert.tasks.record.Flag`); the columns are extractive_summarizer's too.
FLAGS = {
    "head": Flag(str, "auto", "text_classifier head: auto (the family's, as transformers has "
                 "it), pooled (the pooler's output), cls (the [CLS] hidden state) or mean "
                 "(ModernBERT's mean pooling).", group="Model",
                 choices=("auto", "pooled", "cls", "mean")),
    "text_column": Flag(str, "sentence", "text_classifier and extractive_summarizer files: the "
                        "column (CSV/TSV header name or 0-based index, JSONL key) of the text "
                        "(a summarizer's: the document)."),
    "text_pair_column": Flag(Optional[str], None, "text_classifier files: the column of the "
                             "second text of a pair; unset: single texts."),
    "label_column": Flag(str, "label", "text_classifier files: the column of the label (class "
                         "names, integers, or numbers for a regression); extractive_summarizer "
                         "files: of the reference summary."),
}


def check(config):
    """With --validation_data: the `metrics` extra, which scores every epoch (its ImportError
    now, not after the first epoch)."""
    if config.validation_data:
        metrics.require()


def _column(value):
    """A CSV/TSV column given as a 0-based index ("0") or a header name / JSONL key."""
    if value is None:
        return None
    return int(value) if value.lstrip("-").isdigit() else value


def read(config, spec, split, label_names=None):
    """The records of 'tfds:NAME' (GLUE, at `split`) or of a file (`config`'s columns)."""
    if spec.startswith("tfds:"):
        return data.read_tfds(spec.removeprefix("tfds:"), split=split)
    return data.read_classification_file(
        spec, _column(config.text_column), _column(config.text_pair_column),
        _column(config.label_column), label_names=label_names)


def encode(config, records, tokenizer):
    """Encoded once, like the other tasks: the evaluation after every epoch then neither
    builds nor traces the tokenizing pipeline again."""
    return features.encode_classification(records, tokenizer, config.sequence_length)


def fit_labels(labels):
    """What follows the features in `fit`: the labels."""
    return (labels["labels"],)


def build(config, backbone, train):
    regression = train.data.regression
    return TextClassifier(
        backbone, problem_type="regression" if regression else "single_label",
        head=config.head, label_names=None if regression else train.label_names)


def scores(config, split, logits):
    """{metric: value} of the predictions `logits` of the prepared `split`."""
    truth = np.array([example.label for example in split.data.examples])
    if split.data.regression:
        predicted = np.asarray(logits).reshape(-1)
        return {"pearson": metrics.pearson(truth, predicted),
                "spearman": metrics.spearman(truth, predicted)}
    predicted = np.asarray(logits).argmax(-1)
    scores = {"accuracy": metrics.accuracy(truth, predicted),
              "matthews_corrcoef": metrics.matthews_corrcoef(truth, predicted),
              "macro_f1": metrics.f1_score(truth, predicted, average="macro")}
    if len(split.label_names) == 2:
        scores["f1"] = metrics.f1_score(truth, predicted)
    return scores


def metric(config, train):
    """The metric GLUE ranks the task by: MCC (CoLA), F1 (MRPC), Pearson (STS-B, any
    regression), else accuracy."""
    if train.data.regression:
        return "pearson"
    name = config.train_data.removeprefix("tfds:glue/")
    return {"cola": "matthews_corrcoef", "mrpc": "f1"}.get(name, "accuracy")


def export_options(config, train):
    """The pipeline options fixed in `--export_dir`'s SavedModel (`model.export`): texts cut
    to the run's `--sequence_length` as in training (its labels are the model's)."""
    return {"truncation": True, "max_length": config.sequence_length}
