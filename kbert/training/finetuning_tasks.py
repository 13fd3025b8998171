"""The fine-tuning tasks: one record each, with what a run needs to know of it, for every
task record of `kbert.tasks.registry` with `finetuning` (which names them, their models and
their `--task` help).

Each task folder's `finetuning` module holds its hooks (`kbert.tasks.<task>.finetuning`):
`read` its data (TFDS or a file), `encode` it, `fit_labels`, `build` the kbert task model,
`scores` of its predictions by the benchmark's own metrics (GLUE, seqeval's entity F1, the
SQuAD script's exact match and F1), and the `metric` that picks the best epoch; and says how
its inputs batch: `BY_LENGTH` (they vary in length: batches grouped by length) and
`PER_TOKEN` (its labels and outputs are per token). This module runs them: batches,
predictions, the stream `fit` reads.
"""

import dataclasses
from typing import Callable

from kbert.tasks import datasets, registry
from kbert.tasks import length_groups
from kbert.tasks.fitting import model_inputs


def validation_spec(config):
    """The data scored after each epoch: --validation_data, else a TFDS dataset's own
    validation split, else none (a training file alone)."""
    if config.validation_data is not None:
        return config.validation_data
    return config.train_data if config.train_data.startswith("tfds:") else None


def _only_inputs(model, dataset):
    return dataset.map(lambda x, *rest: (model_inputs(model, x), *rest))


@dataclasses.dataclass
class Prepared:
    """A split, encoded: the batches `fit` reads and what scoring its predictions needs."""

    data: object  # ClassificationData, TaggingData or QuestionAnsweringData
    encoded: object  # EncodedClassification, EncodedTagging or EncodedQuestions
    label_names: list


def _grouped(config, module):
    """Batches grouped by length for this run and task (`--group_by_length`, a task whose
    inputs vary in length: not question answering's windows, full by construction; not on
    TPUs, which want one static shape)."""
    return (config.group_by_length and module.BY_LENGTH
            and config.strategy != "tpu")


def _array_batches(module):
    """Batches of an encoded split, with `module.fit_labels(labels)` -> what follows the
    features in the model's `fit` (the labels, and sample weights where the task has them):
    grouped by length (`length_groups`) where `_grouped`, else padded to
    --sequence_length."""
    fit_labels = module.fit_labels

    def batches(config, split, tokenizer, training, seed):
        if training and _grouped(config, module):
            dataset = length_groups.training_stream(
                split.encoded.features, split.encoded.labels, config.global_batch_size,
                config.sequence_length, seed, config.epochs, token_labels=module.PER_TOKEN,
                merge=config.jit_compile)
        else:
            dataset = datasets.arrays_dataset(
                split.encoded.features, split.encoded.labels, config.global_batch_size,
                training=training, seed=seed, repeat=training)
        return dataset.map(lambda x, y: (x, *fit_labels(y)))

    return batches


def _predict(config, model, split, module):
    features = model_inputs(model, split.encoded.features)
    if _grouped(config, module) and len(split.encoded.features["padding_mask"]):
        return length_groups.predict(model, features, config.global_batch_size,
                                     config.sequence_length, token_outputs=module.PER_TOKEN)
    return model.predict(features, batch_size=config.global_batch_size, verbose=0)


@dataclasses.dataclass(frozen=True)
class FinetuningTask:
    """What a fine-tuning task reads, trains and is scored by.

    Attributes:
        name: the `--task` value: the name of its `kbert.tasks.registry` record.
        read: (config, spec, split, label_names) -> the split's data.
        encode: (config, data, tokenizer) -> the encoded split (features as arrays).
        batches: (config, prepared split, tokenizer, training, seed) -> a dataset of the
            model's `fit` arguments (all features); `training=True`: the endless stream.
        build: (config, backbone, prepared training split) -> the task model.
        scores: (config, model, prepared split, tokenizer) -> {metric: value}.
        metric: (config, prepared training split) -> the metric that picks the best epoch.
        export_options: (config, prepared training split) -> the pipeline options
            `model.export` fixes in `--export_dir`'s SavedModel.
    """

    name: str
    read: Callable
    encode: Callable
    batches: Callable
    build: Callable
    scores: Callable
    metric: Callable
    export_options: Callable

    def training_stream(self, config, model, split, tokenizer):
        """The endless shuffled stream of what `model.fit` takes, the same from every
        iterator (a resumed run skips the steps it did)."""
        return _only_inputs(model, self.batches(config, split, tokenizer, True, config.seed))

    def prepare(self, config, spec, split, tokenizer, label_names=None):
        data = self.read(config, spec, split, label_names)
        encoded = self.encode(config, data, tokenizer)
        return Prepared(data, encoded, getattr(data, "label_names", None))




def _hooks(name, module):
    # Encoded once: the evaluation after every epoch then neither builds nor traces the
    # tokenizing pipeline again.
    return FinetuningTask(
        name, module.read, module.encode, _array_batches(module), module.build,
        lambda config, model, split, tokenizer: module.scores(
            config, split, _predict(config, model, split, module)),
        module.metric, module.export_options)


# `--task` -> its record here, for every fine-tuning task of the table: the hooks are its
# folder's `finetuning` module (a LookupError here: a task record says `finetuning` and its
# folder has no hooks).
FINETUNING_TASKS = {record.name: _hooks(record.name, record.module("finetuning"))
                    for record in registry.finetuning_tasks()}
