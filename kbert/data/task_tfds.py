"""Fine-tuning data from tensorflow-datasets, as the records of `kbert.data.task_records`.

`tfds_task(name, split)` knows the feature names of each builder it supports:

- squad/v1.1, squad/v2.0: id, question, context, answers {text, answer_start},
  is_impossible (v2) -> `QuestionAnsweringData`;
- conll2003: tokens, ner (or pos, chunks: `tag_feature`) -> `TaggingData`.

GLUE (glue/sst2, glue/cola, glue/mrpc, glue/mnli, glue/stsb) is read by
`kbert.tasks.text_classification.data.read_tfds`, through `builder_rows`.
"""

import typing

from kbert.data.task_features import DataError
from kbert.data.task_records import (
    QuestionAnsweringData,
    QuestionExample,
    TaggingData,
    TaggingExample,
    check_question,
)


class TfdsTask(typing.NamedTuple):
    """How a TFDS builder's features map onto kbert's records."""

    kind: str  # "classification", "regression", "question_answering" or "tagging"
    text_a: str  # the text feature (QA: the question; tagging: the words)
    text_b: typing.Optional[str]  # the second text of a pair (QA: the context), or None
    label: str  # the label feature (QA: the answers; tagging: the tags)


TFDS_TASKS = {
    "squad/v1.1": TfdsTask("question_answering", "question", "context", "answers"),
    "squad/v2.0": TfdsTask("question_answering", "question", "context", "answers"),
    "conll2003": TfdsTask("tagging", "tokens", None, "ner"),
}


def _text(value):
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def builder_rows(name, task, split, data_dir=None, download=True):
    """(rows, features, where): the rows (numpy) of the TFDS builder `name` at `split`, its
    features, and "name (split)" for messages; `DataError` where the builder lacks a feature
    that `task` (a `TfdsTask`) reads."""
    import tensorflow_datasets as tfds

    builder = tfds.builder(name, data_dir=data_dir)
    features = builder.info.features
    expected = [f for f in (task.text_a, task.text_b, task.label) if f is not None]
    if task.kind == "question_answering":
        expected.append("id")
    missing = [f for f in expected if f not in features]
    if missing:
        raise DataError(f"{name}: the builder has no feature {missing}; its features: "
                        f"{sorted(features)}.")
    if download:
        builder.download_and_prepare()
    rows = builder.as_dataset(split=split).as_numpy_iterator()
    return rows, features, f"{name} ({split})"


def tfds_task(name, split="train", data_dir=None, download=True, tag_feature=None):
    """Reads a fine-tuning dataset from tensorflow-datasets (see the table above).

    Args:
        name: one of `TFDS_TASKS` ("squad/v2.0", "conll2003", ...).
        split: a TFDS split.
        data_dir, download: as `tfds.builder` / `download_and_prepare`.
        tag_feature: conll2003's tag sequence: "ner" (default), "pos" or "chunks".
    Returns:
        `TaggingData` or `QuestionAnsweringData`.
    """
    if name not in TFDS_TASKS:
        raise ValueError(f"Unknown TFDS task {name!r}; kbert reads {sorted(TFDS_TASKS)} here "
                         "(GLUE: kbert.tasks.text_classification.data.read_tfds).")
    kind, text_a, text_b, label = TFDS_TASKS[name]
    if kind == "tagging" and tag_feature is not None:
        label = tag_feature
    rows, features, where = builder_rows(name, TfdsTask(kind, text_a, text_b, label), split,
                                         data_dir, download)
    if kind == "question_answering":
        return _questions(rows, where, name == "squad/v2.0")
    if kind == "tagging":
        names = list(features[label].feature.names)
        return _sentences(rows, where, text_a, label, names)


def _sentences(rows, where, words_key, tags_key, names):
    examples = []
    for i, row in enumerate(rows):
        origin = f"{where} example {i}"
        words = tuple(_text(w) for w in row[words_key])
        tags = tuple(int(t) for t in row[tags_key])
        if len(words) != len(tags):
            raise DataError(f"{origin}: {len(words)} words but {len(tags)} tags.")
        if not words:
            continue
        for j, word in enumerate(words):
            if not word.strip():
                raise DataError(f"{origin}: word {j} is empty.")
        for j, tag in enumerate(tags):
            if not 0 <= tag < len(names):
                raise DataError(f"{origin}: tag {tag} of word {j} is outside the "
                                f"{len(names)} tags {names}.")
        examples.append(TaggingExample(words, tags, origin))
    if not examples:
        raise DataError(f"{where}: no sentences.")
    return TaggingData(examples, names, where)


def _questions(rows, where, version_2):
    examples = []
    for row in rows:
        answers = row["answers"]
        pairs = tuple((_text(t), int(s)) for t, s in zip(answers["text"],
                                                          answers["answer_start"]))
        impossible = bool(row.get("is_impossible", False))
        qid = _text(row["id"])
        example = QuestionExample(qid, _text(row["question"]), _text(row["context"]),
                                  () if impossible else pairs, impossible,
                                  f"{where} question id {qid!r}")
        check_question(example, where)
        examples.append(example)
    if not examples:
        raise DataError(f"{where}: no questions.")
    return QuestionAnsweringData(examples, version_2, where)
