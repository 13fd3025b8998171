"""Serving signatures of the fine-tuning task models (`kbert.tasks`): raw strings in, what a
user wants out (labels and probabilities, entities, answers, embeddings).

`kbert.serving.export_saved_model` calls `task_archive` when its model is a `kbert.tasks.Task`.
The model's task record (`kbert.tasks.registry.of_model`) says which arguments it takes
(`export_options`), and its folder's `serving.add_endpoints` writes the signatures.
Everything between the strings and the answers runs in the graph (tensorflow-text's ops and
TensorFlow's), so that the SavedModel loads with TensorFlow and tensorflow-text alone; the
predictions equal the Keras model's decoded by its task folder's `decode` in Python
(tested).
"""

import keras

from kbert.tasks import registry
from kbert.tasks.graph.signatures import refuse_byte_pair_words

# Arguments of export_saved_model that only some tasks take (their records' `export_options`);
# None: not given.
TASK_OPTIONS = {name: tuple(r for r in registry.task_models() if name in r.export_options)
                for record in registry.task_models() for name in record.export_options}


class _Prefixed:
    """An archive whose endpoints are named after a head: `serving_default` -> NAME,
    `serving_pairs` -> NAME_pairs, `serving_ids` -> NAME_ids (a multi-task SavedModel)."""

    def __init__(self, archive, prefix):
        self.archive, self.prefix = archive, prefix

    def add_endpoint(self, name, fn, input_signature=None, **kwargs):
        suffix = name.removeprefix("serving").removeprefix("_default")
        return self.archive.add_endpoint(self.prefix + suffix, fn, input_signature, **kwargs)


def task_archive(model, tokenizer, sequence_length, archive=None, signature_prefix=None,
                 **options):
    """A `keras.export.ExportArchive` with the signatures of the task model `model`.

    `options`: the task arguments of `export_saved_model` (None: not given; a given one
    that is not for this task is an error). `archive`: add them to this one (default: a new
    one); `signature_prefix`: named after a head (see `_Prefixed`).
    """
    record = registry.of_model(model)
    if record is None or record.model is None:
        raise TypeError(f"export_saved_model has no signatures for {type(model).__name__}; "
                        f"its task models are "
                        f"{', '.join(r.model.__name__ for r in registry.task_models())}.")
    for name, value in options.items():
        takers = TASK_OPTIONS[name]
        if value is not None and record not in takers:
            raise ValueError(f"`{name}` is for a {' or '.join(r.model.__name__ for r in takers)}"
                             f", not a {type(model).__name__}.")
    refuse_byte_pair_words(tokenizer, record)
    archive = archive if archive is not None else keras.export.ExportArchive()
    archive.track(model)
    archive.track(tokenizer)
    record.module("serving").add_endpoints(
        archive if signature_prefix is None else _Prefixed(archive, signature_prefix), model, tokenizer, sequence_length,
        **{name: options.get(name) for name in record.export_options})
    return archive
