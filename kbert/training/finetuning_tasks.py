"""The fine-tuning tasks: one record each, with what a run needs to know of it, for every
task record of `kbert.tasks.registry` with `finetuning` (which names them, their models and
their `--task` help).

A record reads the task's data (TFDS or a file), turns it into batches, builds the kbert task
model, feeds `fit` what that model takes, and scores predictions with the benchmark's own
metrics (GLUE, seqeval's entity F1, the SQuAD script's exact match and F1).
"""

import dataclasses
from typing import Callable

import numpy as np

from kbert import data as kdata
from kbert.tasks import metrics as task_metrics
from kbert.tasks import registry
from kbert.tasks.question_answering import finetuning as qa_hooks


def _read(config, spec, split, label_names=None):
    """The task's records from 'tfds:NAME' (at `split`) or a file."""
    if config.task == "question_answerer":
        return qa_hooks.read(config, spec, split, label_names)
    if spec.startswith("tfds:"):
        return kdata.tfds_task(spec.removeprefix("tfds:"), split=split)
    if config.task == "text_classifier":
        return kdata.read_classification_file(
            spec, _column(config.text_column), _column(config.text_pair_column),
            _column(config.label_column), label_names=label_names)
    if config.task == "token_classifier":
        return kdata.read_conll(spec, config.word_column, config.tag_column,
                                label_names=label_names)


def _column(value):
    """A CSV/TSV column given as a 0-based index ("0") or a header name / JSONL key."""
    if value is None:
        return None
    return int(value) if value.lstrip("-").isdigit() else value


def model_inputs(model, features):
    """The features `model` takes (DistilBERT has no `segment_ids`)."""
    return {name: value for name, value in features.items() if name in model.input}


def _only_inputs(model, dataset):
    return dataset.map(lambda x, *rest: (model_inputs(model, x), *rest))


@dataclasses.dataclass
class Prepared:
    """A split, encoded: the batches `fit` reads and what scoring its predictions needs."""

    data: object  # ClassificationData, TaggingData or QuestionAnsweringData
    encoded: object  # EncodedClassification, EncodedTagging or EncodedQuestions
    label_names: list


def _array_batches(fit_labels):
    """Batches of an encoded split, with `fit_labels(labels)` -> what follows the features in
    the model's `fit` (the labels, and sample weights where the task has them)."""

    def batches(config, split, tokenizer, training, seed):
        dataset = kdata.task_features.arrays_dataset(
            split.encoded.features, split.encoded.labels, config.global_batch_size,
            training=training, seed=seed, repeat=training)
        return dataset.map(lambda x, y: (x, *fit_labels(y)))

    return batches


def _predict(config, model, split):
    return model.predict(model_inputs(model, split.encoded.features),
                         batch_size=config.global_batch_size, verbose=0)


# === text_classifier ===

def _classifier_model(config, backbone, train):
    regression = train.data.regression
    return registry.TEXT_CLASSIFIER.build(
        backbone, problem_type="regression" if regression else "single_label",
        head=config.head, label_names=None if regression else train.label_names)


def _classifier_scores(config, model, split, tokenizer):
    logits = _predict(config, model, split)
    truth = np.array([example.label for example in split.data.examples])
    if split.data.regression:
        predicted = np.asarray(logits).reshape(-1)
        return {"pearson": task_metrics.pearson(truth, predicted),
                "spearman": task_metrics.spearman(truth, predicted)}
    predicted = np.asarray(logits).argmax(-1)
    scores = {"accuracy": task_metrics.accuracy(truth, predicted),
              "matthews_corrcoef": task_metrics.matthews_corrcoef(truth, predicted),
              "macro_f1": task_metrics.f1_score(truth, predicted, average="macro")}
    if len(split.label_names) == 2:
        scores["f1"] = task_metrics.f1_score(truth, predicted)
    return scores


def _classifier_metric(config, train):
    """The metric GLUE ranks the task by: MCC (CoLA), F1 (MRPC), Pearson (STS-B, any
    regression), else accuracy."""
    if train.data.regression:
        return "pearson"
    name = config.train_data.removeprefix("tfds:glue/")
    return {"cola": "matthews_corrcoef", "mrpc": "f1"}.get(name, "accuracy")


# === token_classifier ===

def _tagger_model(config, backbone, train):
    return registry.TOKEN_CLASSIFIER.build(backbone, label_names=train.label_names)


def _tagger_scores(config, model, split, tokenizer):
    predicted = split.encoded.word_predictions(_predict(config, model, split))
    names = split.label_names
    gold, found = [], []
    for example, tags in zip(split.data.examples, predicted):
        gold.append([names[t] for t in example.tags])
        found.append([tag if tag is not None else "O" for tag in tags])
    scheme = None if config.tag_scheme in ("IOB1", "BIO") else config.tag_scheme
    scheme = {"IOBES": "IOBES", "BIOES": "IOBES"}.get(scheme, scheme)
    scores = task_metrics.entity_scores(gold, found, scheme=scheme)
    return {"precision": scores["precision"], "recall": scores["recall"], "f1": scores["f1"]}


@dataclasses.dataclass(frozen=True)
class FinetuningTask:
    """What a fine-tuning task reads, trains and is scored by.

    Attributes:
        name: the `--task` value: the name of its `kbert.tasks.registry` record.
        encode: (config, data, tokenizer) -> the encoded split (features as arrays).
        batches: (config, prepared split, tokenizer, training, seed) -> a dataset of the
            model's `fit` arguments (all features); `training=True`: the endless stream.
        build: (config, backbone, prepared training split) -> the task model.
        scores: (config, model, prepared split, tokenizer) -> {metric: value}.
        metric: (config, prepared training split) -> the metric that picks the best epoch.
    """

    name: str
    encode: Callable
    batches: Callable
    build: Callable
    scores: Callable
    metric: Callable

    def training_stream(self, config, model, split, tokenizer):
        """The endless shuffled stream of what `model.fit` takes, the same from every
        iterator (a resumed run skips the steps it did)."""
        return _only_inputs(model, self.batches(config, split, tokenizer, True, config.seed))

    def prepare(self, config, spec, split, tokenizer, label_names=None):
        data = _read(config, spec, split, label_names)
        encoded = self.encode(config, data, tokenizer)
        return Prepared(data, encoded, getattr(data, "label_names", None))


_HOOKS = {task.name: task for task in (
    # Encoded once, like the other tasks: the evaluation after every epoch then neither
    # builds nor traces the tokenizing pipeline again.
    FinetuningTask("text_classifier",
                   lambda config, data, tokenizer: kdata.encode_classification(
                       data, tokenizer, config.sequence_length),
                   _array_batches(lambda y: (y["labels"],)), _classifier_model,
                   _classifier_scores, _classifier_metric),
    FinetuningTask("token_classifier",
                   lambda config, data, tokenizer: kdata.encode_tagging(
                       data, tokenizer, config.sequence_length),
                   _array_batches(lambda y: (y["labels"], y["label_weights"])),
                   _tagger_model, _tagger_scores, lambda config, train: "f1"),
    FinetuningTask("question_answerer", qa_hooks.encode, _array_batches(qa_hooks.fit_labels),
                   qa_hooks.build,
                   lambda config, model, split, tokenizer: qa_hooks.scores(
                       config, _predict(config, model, split), split),
                   qa_hooks.metric),
)}
# `--task` -> its record here, for every fine-tuning task of the table (a KeyError here: a task
# record says `finetuning` and has no hooks).
FINETUNING_TASKS = {record.name: _HOOKS[record.name] for record in registry.finetuning_tasks()}
