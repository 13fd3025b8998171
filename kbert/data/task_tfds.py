"""Fine-tuning data from tensorflow-datasets, as the records of `kbert.data.task_records`.

`tfds_task(name, split)` knows the feature names of each builder it supports:

- squad/v1.1, squad/v2.0: id, question, context, answers {text, answer_start},
  is_impossible (v2) -> `QuestionAnsweringData`.

GLUE (glue/sst2, glue/cola, glue/mrpc, glue/mnli, glue/stsb) is read by
`kbert.tasks.text_classification.data.read_tfds`, conll2003 by
`kbert.tasks.token_classification.data.read_tfds`, each through `builder_rows` with a table
of its own.
"""

import typing

from kbert.data.task_features import DataError
from kbert.data.task_records import (
    QuestionAnsweringData,
    QuestionExample,
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


def tfds_task(name, split="train", data_dir=None, download=True):
    """Reads a fine-tuning dataset from tensorflow-datasets (see the table above).

    Args:
        name: one of `TFDS_TASKS` ("squad/v1.1", "squad/v2.0").
        split: a TFDS split.
        data_dir, download: as `tfds.builder` / `download_and_prepare`.
    Returns:
        `QuestionAnsweringData`.
    """
    if name not in TFDS_TASKS:
        raise ValueError(f"Unknown TFDS task {name!r}; kbert reads {sorted(TFDS_TASKS)} here "
                         "(GLUE: kbert.tasks.text_classification.data.read_tfds; conll2003: "
                         "kbert.tasks.token_classification.data.read_tfds).")
    rows, _, where = builder_rows(name, TFDS_TASKS[name], split, data_dir, download)
    return _questions(rows, where, name == "squad/v2.0")


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
