"""The fine-tuning tasks: one record each, with what a run needs to know of it, for every
task record of `kbert.tasks.registry` with `finetuning` (which names them, their models and
their `--task` help).

Each task folder's `finetuning` module holds its hooks (`kbert.tasks.<task>.finetuning`):
`read` its data (TFDS or a file), `encode` it, `fit_labels`, `build` the kbert task model,
`scores` of its predictions by the benchmark's own metrics (GLUE, seqeval's entity F1, the
SQuAD script's exact match and F1), and the `metric` that picks the best epoch. This module
runs them: batches, predictions, the stream `fit` reads.
"""

import dataclasses
from typing import Callable

from kbert.tasks import datasets, registry
from kbert.tasks.question_answering import finetuning as question_answering
from kbert.tasks.text_classification import finetuning as text_classification
from kbert.tasks.token_classification import finetuning as token_classification

# The hooks of each fine-tuning task, by its record's name.
_MODULES = {"text_classifier": text_classification, "token_classifier": token_classification,
            "question_answerer": question_answering}


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
        dataset = datasets.arrays_dataset(
            split.encoded.features, split.encoded.labels, config.global_batch_size,
            training=training, seed=seed, repeat=training)
        return dataset.map(lambda x, y: (x, *fit_labels(y)))

    return batches


def _predict(config, model, split):
    return model.predict(model_inputs(model, split.encoded.features),
                         batch_size=config.global_batch_size, verbose=0)


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
        data = _MODULES[self.name].read(config, spec, split, label_names)
        encoded = self.encode(config, data, tokenizer)
        return Prepared(data, encoded, getattr(data, "label_names", None))




def _hooks(name, module):
    # Encoded once: the evaluation after every epoch then neither builds nor traces the
    # tokenizing pipeline again.
    return FinetuningTask(
        name, module.encode, _array_batches(module.fit_labels), module.build,
        lambda config, model, split, tokenizer: module.scores(
            config, split, _predict(config, model, split)),
        module.metric)


# `--task` -> its record here, for every fine-tuning task of the table (a KeyError here: a task
# record says `finetuning` and has no hooks).
FINETUNING_TASKS = {record.name: _hooks(record.name, _MODULES[record.name])
                    for record in registry.finetuning_tasks()}
