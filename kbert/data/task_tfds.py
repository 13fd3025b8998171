"""Fine-tuning data from tensorflow-datasets, as the records of `kbert.data.task_records`
(tagging: `kbert.tasks.token_classification.data.read_tfds`).

`tfds_task(name, split)` knows the feature names of each builder it supports:

- glue/sst2, glue/cola: sentence, label (ClassLabel) -> `ClassificationData`;
- glue/mrpc, glue/stsb: sentence1, sentence2, label (stsb: float32, regression);
- glue/mnli: premise, hypothesis, label; the split "validation" means validation_matched;
- squad/v1.1, squad/v2.0: id, question, context, answers {text, answer_start},
  is_impossible (v2) -> `QuestionAnsweringData`;
- conll2003: tokens, ner (or pos, chunks: `tag_feature`) -> `TaggingData`
  (`kbert.tasks.token_classification.data.read_tfds`).

Label names come from the builders' ClassLabel features. GLUE's test splits have no labels
(-1): their records have `label=None`.
"""

import typing

from kbert.data.task_features import DataError
from kbert.data.task_records import (
    ClassificationData,
    ClassificationExample,
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
    "glue/sst2": TfdsTask("classification", "sentence", None, "label"),
    "glue/cola": TfdsTask("classification", "sentence", None, "label"),
    "glue/mrpc": TfdsTask("classification", "sentence1", "sentence2", "label"),
    "glue/mnli": TfdsTask("classification", "premise", "hypothesis", "label"),
    "glue/stsb": TfdsTask("regression", "sentence1", "sentence2", "label"),
    "squad/v1.1": TfdsTask("question_answering", "question", "context", "answers"),
    "squad/v2.0": TfdsTask("question_answering", "question", "context", "answers"),
    "conll2003": TfdsTask("tagging", "tokens", None, "ner"),
}
_SPLIT_ALIASES = {"glue/mnli": {"validation": "validation_matched", "test": "test_matched"}}


def _text(value):
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def tfds_rows(name, split="train", data_dir=None, download=True, tag_feature=None):
    """A TFDS builder's rows for `name` (one of `TFDS_TASKS`), its features checked against
    the table: (its `TfdsTask`, with `label` = `tag_feature` where given, the builder's
    features, the rows as numpy, "name (split)" for errors).

    Args:
        name: one of `TFDS_TASKS` ("glue/sst2", "squad/v2.0", "conll2003", ...).
        split: a TFDS split; for glue/mnli, "validation" and "test" mean the matched ones.
        data_dir, download: as `tfds.builder` / `download_and_prepare`.
        tag_feature: conll2003's tag sequence: "ner" (default), "pos" or "chunks".
    """
    if name not in TFDS_TASKS:
        raise ValueError(f"Unknown TFDS task {name!r}; kbert reads {sorted(TFDS_TASKS)}.")
    import tensorflow_datasets as tfds

    task = TFDS_TASKS[name]
    kind, text_a, text_b, label = task
    if kind == "tagging" and tag_feature is not None:
        task = task._replace(label=tag_feature)
        label = tag_feature
    split = _SPLIT_ALIASES.get(name, {}).get(split, split)
    builder = tfds.builder(name, data_dir=data_dir)
    features = builder.info.features
    expected = [f for f in (text_a, text_b, label) if f is not None]
    if kind == "question_answering":
        expected.append("id")
    missing = [f for f in expected if f not in features]
    if missing:
        raise DataError(f"{name}: the builder has no feature {missing}; its features: "
                        f"{sorted(features)}.")
    if download:
        builder.download_and_prepare()
    rows = builder.as_dataset(split=split).as_numpy_iterator()
    return task, features, rows, f"{name} ({split})"


def tfds_task(name, split="train", data_dir=None, download=True):
    """Reads a fine-tuning dataset from tensorflow-datasets (see the table above; the
    arguments are `tfds_rows`'). A tagging dataset (conll2003) is read by
    `kbert.tasks.token_classification.data.read_tfds`.

    Returns:
        `ClassificationData` or `QuestionAnsweringData`.
    """
    if name in TFDS_TASKS and TFDS_TASKS[name].kind == "tagging":
        raise ValueError(f"{name!r} is a tagging dataset: read it with "
                         f"kbert.tasks.token_classification.data.read_tfds({name!r}, split).")
    (kind, text_a, text_b, label), features, rows, where = tfds_rows(name, split, data_dir,
                                                                     download)
    if kind == "question_answering":
        return _questions(rows, where, name == "squad/v2.0")
    names = None if kind == "regression" else list(features[label].names)
    return _classification(rows, where, text_a, text_b, label, names)


def _classification(rows, where, text_a, text_b, label, names):
    examples = []
    for i, row in enumerate(rows):
        origin = f"{where} example {i}"
        texts = []
        for key in (text_a, text_b):
            text = None if key is None else _text(row[key])
            if key is not None and not text.strip():
                raise DataError(f"{origin}: empty text in feature {key!r}.")
            texts.append(text)
        value = row[label]
        if names is None:
            value = float(value)
        else:
            value = int(value)
            if value == -1:  # GLUE's test splits
                value = None
            elif not 0 <= value < len(names):
                raise DataError(f"{origin}: label {value} is outside the {len(names)} "
                                f"labels {names}.")
        examples.append(ClassificationExample(texts[0], texts[1], value, origin))
    if not examples:
        raise DataError(f"{where}: no examples.")
    return ClassificationData(examples, names, names is None, where)


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
