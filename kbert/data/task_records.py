"""What the task folders' records share: labels stored as indices into the data's
`label_names` (floats for regression), each record keeping its `origin` ("train.tsv: line
12", "conll2003 (train) example 4") so that an error found later still names the row."""

from kbert.data.task_features import DataError


def _is_number(value):
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _is_integral(value):
    if isinstance(value, str):
        return value.strip().lstrip("+-").isdigit()
    return isinstance(value, int)


def label_indices(raw_labels, origins, label_names=None, regression=None):
    """Raw labels (strings or numbers) -> (labels, label_names, regression).

    Regression when asked, or (`regression=None`) when every label is a number and some is not
    an integer ("3.800"): labels become floats. Else the names are `label_names`, or the
    distinct labels sorted (numerically when all are integers), and each label its index.
    """
    if regression is None:
        regression = (label_names is None and bool(raw_labels)
                      and all(_is_number(v) for v in raw_labels)
                      and not all(_is_integral(v) for v in raw_labels))
    if regression:
        labels = []
        for value, origin in zip(raw_labels, origins):
            if not _is_number(value):
                raise DataError(f"{origin}: the regression label {value!r} is not a number.")
            labels.append(float(value))
        return labels, None, True
    strings = [str(v).strip() for v in raw_labels]
    if label_names is None:
        distinct = set(strings)
        numeric = all(s.lstrip("+-").isdigit() for s in distinct)
        label_names = sorted(distinct, key=int if numeric else None)
    label_names = [str(name) for name in label_names]
    index = {name: i for i, name in enumerate(label_names)}
    labels = []
    for value, origin in zip(strings, origins):
        if value not in index:
            raise DataError(f"{origin}: unknown label {value!r}; expected one of "
                            f"{label_names}.")
        labels.append(index[value])
    return labels, label_names, False
