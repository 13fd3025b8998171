"""Fine-tuning data from tensorflow-datasets, as the records of `kbert.data.task_records`.

`tfds_task(name, split)` knows the feature names of each builder it supports:

- glue/sst2, glue/cola: sentence, label (ClassLabel) -> `ClassificationData`;
- glue/mrpc, glue/stsb: sentence1, sentence2, label (stsb: float32, regression);
- glue/mnli: premise, hypothesis, label; the split "validation" means validation_matched;
- squad/v1.1, squad/v2.0: id, question, context, answers {text, answer_start},
  is_impossible (v2): read by `kbert.tasks.question_answering.data.tfds_squad`, on
  `tfds_rows`;
- conll2003: tokens, ner (or pos, chunks: `tag_feature`) -> `TaggingData`.

Label names come from the builders' ClassLabel features. GLUE's test splits have no labels
(-1): their records have `label=None`.
"""

import typing

from kbert.data.task_features import DataError
from kbert.data.task_records import (
    ClassificationData,
    ClassificationExample,
    TaggingData,
    TaggingExample,
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


def tfds_task(name, split="train", data_dir=None, download=True, tag_feature=None):
    """Reads a fine-tuning dataset from tensorflow-datasets (see the table above).

    Args:
        name: one of `TFDS_TASKS` ("glue/sst2", "glue/stsb", "conll2003", ...; SQuAD's are
            `kbert.tasks.question_answering.data.tfds_squad`'s).
        split: a TFDS split; for glue/mnli, "validation" and "test" mean the matched ones.
        data_dir, download: as `tfds.builder` / `download_and_prepare`.
        tag_feature: conll2003's tag sequence: "ner" (default), "pos" or "chunks".
    Returns:
        `ClassificationData` or `TaggingData`.
    """
    if name not in TFDS_TASKS:
        raise ValueError(f"Unknown TFDS task {name!r}; kbert reads {sorted(TFDS_TASKS)}.")
    kind, text_a, text_b, label = TFDS_TASKS[name]
    if kind == "question_answering":
        raise ValueError(f"{name} is read by kbert.tasks.question_answering.data.tfds_squad "
                         f"(its records live with the task).")
    if kind == "tagging" and tag_feature is not None:
        label = tag_feature
    rows, features, where = tfds_rows(name, split, data_dir, download,
                                      [f for f in (text_a, text_b, label) if f is not None])
    if kind == "tagging":
        names = list(features[label].feature.names)
        return _sentences(rows, where, text_a, label, names)
    names = None if kind == "regression" else list(features[label].names)
    return _classification(rows, where, text_a, text_b, label, names)


def tfds_rows(name, split, data_dir, download, expected):
    """The rows (numpy) of TFDS dataset `name` at `split` (glue/mnli's "validation" and
    "test": the matched ones), checked to have the features `expected`; returns (rows, the
    builder's features, "name (split)" for errors)."""
    import tensorflow_datasets as tfds

    split = _SPLIT_ALIASES.get(name, {}).get(split, split)
    builder = tfds.builder(name, data_dir=data_dir)
    features = builder.info.features
    missing = [f for f in expected if f not in features]
    if missing:
        raise DataError(f"{name}: the builder has no feature {missing}; its features: "
                        f"{sorted(features)}.")
    if download:
        builder.download_and_prepare()
    rows = builder.as_dataset(split=split).as_numpy_iterator()
    return rows, features, f"{name} ({split})"


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

