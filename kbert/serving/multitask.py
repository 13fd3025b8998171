"""One SavedModel for the heads of a multi-task run: each head's task signatures, named after
it, over the one backbone they share (`kbert.training.multitask`)."""

import re

import keras

from kbert.serving.saved_model import task_metadata
from kbert.serving.task_signatures import task_archive
from kbert.serving import metadata, writer

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def export_multitask_saved_model(models, path, tokenizer, sequence_lengths=None, options=None,
                                 write_vocabulary=True):
    """Writes a SavedModel with the signatures of every task model in `models`.

    Each head's signatures are those `export_saved_model` gives its task model alone (strings
    in, its predictions out), renamed after the head: `serving_default` -> NAME,
    `serving_pairs` -> NAME_pairs, `serving_ids` -> NAME_ids. `serving_default` is the first
    head's NAME signature. Variables the heads share (their backbone) are saved once.

    Args:
        models: {name: a kbert task model}; names are letters, digits and _ (a letter
            first), not starting with "serving".
        path: the SavedModel directory.
        tokenizer: the tokenizer of the backbone they share.
        sequence_lengths: {name: padded length of its string signatures} (default: the
            backbone's max_sequence_length).
        options: {name: {the task arguments of `export_saved_model`}} (e.g. `tag_scheme`).
        write_vocabulary: also write the tokenizer's files beside `saved_model.pb`.
    """
    if not models:
        raise ValueError("export_multitask_saved_model needs one or more task models.")
    sequence_lengths, options = dict(sequence_lengths or {}), dict(options or {})
    unknown = sorted((set(sequence_lengths) | set(options)) - set(models))
    if unknown:
        raise ValueError(f"sequence_lengths / options for {', '.join(unknown)}: no such "
                         f"model (the models: {', '.join(models)}).")
    archive = keras.export.ExportArchive()
    longest, heads = 0, {}
    for name, model in models.items():
        if not _NAME.match(name) or name.startswith("serving"):
            raise ValueError(f"{name!r} cannot name a head's signatures: letters, digits and "
                             "_ (a letter first), not starting with 'serving'.")
        config = model.backbone.config
        if tokenizer.vocabulary_size != config.vocabulary_size:
            raise ValueError(f"The tokenizer has {tokenizer.vocabulary_size} tokens but "
                             f"{name!r}'s vocabulary_size is {config.vocabulary_size}.")
        length = sequence_lengths.get(name, config.max_sequence_length)
        if not isinstance(length, int) or not 4 <= length <= config.max_sequence_length:
            raise ValueError(f"sequence_lengths[{name!r}]={length!r}: an integer from 4 to "
                             f"the model's max_sequence_length={config.max_sequence_length}.")
        longest = max(longest, config.max_sequence_length)
        task_archive(model, tokenizer, length, archive=archive, signature_prefix=name,
                     **options.get(name, {}))
        heads[name] = task_metadata(model, tokenizer, length, options.get(name, {}).get(
            "label_names"), options.get(name))
    meta = metadata.describe(runtime="saved_model", task="multitask", model="multitask",
                             max_length=longest, tokenizer=tokenizer, heads=heads)
    return writer.saved_model(archive, path, meta, tokenizer if write_vocabulary else None)
