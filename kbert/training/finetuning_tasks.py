"""The fine-tuning tasks: one record each, with what a run needs to know of it, for every
task record of `kbert.tasks.registry` with `finetuning` (which names them, their models and
their `--task` help).

A record reads the task's data (TFDS or a file), turns it into batches, builds the kbert task
model, feeds `fit` what that model takes, and scores predictions with the benchmark's own
metrics (GLUE, seqeval's entity F1, the SQuAD script's exact match and F1).
"""

import dataclasses
from typing import Callable

from kbert import data as kdata
from kbert.tasks import metrics as task_metrics
from kbert.tasks import registry
from kbert.tasks.text_classification import finetuning as text_classification
from kbert.tasks.token_classification import finetuning as tagger


def _read(config, spec, split, label_names=None):
    """The task's records from 'tfds:NAME' (at `split`) or a file."""
    if config.task == "text_classifier":
        return text_classification.read(config, spec, split, label_names)
    if config.task == "token_classifier":
        return tagger.read(config, spec, split, label_names)
    if spec.startswith("tfds:"):
        return kdata.tfds_task(spec.removeprefix("tfds:"), split=split)
    return kdata.read_squad(spec)


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




# === question_answerer ===

def _qa_model(config, backbone, train):
    return registry.QUESTION_ANSWERER.build(backbone)


def _qa_scores(config, model, split, tokenizer):
    outputs = _predict(config, model, split)
    answers = split.encoded.decode(
        outputs["start_logits"], outputs["end_logits"], n_best=config.n_best,
        max_answer_length=config.max_answer_length, null_threshold=config.null_threshold)
    version = "v2.0" if split.data.version_2 else "v1.1"
    predictions = {qid: answer["text"] for qid, answer in answers.items()}
    references = {example.id: [] if example.is_impossible else [a[0] for a in example.answers]
                  for example in split.data.examples}
    return task_metrics.squad_scores(predictions, references, version=version)


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
    FinetuningTask("text_classifier", text_classification.encode,
                   _array_batches(text_classification.fit_labels), text_classification.build,
                   lambda config, model, split, tokenizer: text_classification.scores(
                       config, split, _predict(config, model, split)),
                   text_classification.metric),
    FinetuningTask("token_classifier", tagger.encode, _array_batches(tagger.fit_labels),
                   tagger.build,
                   lambda config, model, split, tokenizer: tagger.scores(
                       config, split, _predict(config, model, split)),
                   tagger.metric),
    FinetuningTask("question_answerer",
                   lambda config, data, tokenizer: kdata.encode_questions(
                       data, tokenizer, config.sequence_length, config.qa_doc_stride(),
                       config.max_question_length),
                   _array_batches(lambda y: ({"start_logits": y["start_positions"],
                                              "end_logits": y["end_positions"]},)),
                   _qa_model, _qa_scores, lambda config, train: "f1"),
)}
# `--task` -> its record here, for every fine-tuning task of the table (a KeyError here: a task
# record says `finetuning` and has no hooks).
FINETUNING_TASKS = {record.name: _HOOKS[record.name] for record in registry.finetuning_tasks()}
