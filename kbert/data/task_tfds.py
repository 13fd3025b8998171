"""Fine-tuning data from tensorflow-datasets: what the task folders' readers share. Each
folder has its table of builders (`TfdsTask`: which features are the text, the pair, the
label) and reads the rows `builder_rows` gives: GLUE in `kbert.tasks.text_classification.data`,
conll2003 in `kbert.tasks.token_classification.data`, SQuAD in
`kbert.tasks.question_answering.data`."""

import typing

from kbert.data.task_features import DataError


class TfdsTask(typing.NamedTuple):
    """How a TFDS builder's features map onto kbert's records."""

    kind: str  # "classification", "regression", "question_answering" or "tagging"
    text_a: str  # the text feature (QA: the question; tagging: the words)
    text_b: typing.Optional[str]  # the second text of a pair (QA: the context), or None
    label: str  # the label feature (QA: the answers; tagging: the tags)


def text(value):
    """A TFDS string feature (bytes) as str."""
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
