"""Writes a `keras.export.ExportArchive` tracing each endpoint once instead of twice.

`ExportArchive.write_out` first traces every endpoint to list the variables it uses, then
`tf.saved_model.save` traces it again: TensorFlow's function cache keys a trace by whether
it ran inside a SavedModel save (the save options' variable policy), so the first trace is
not reused. `write_archive` makes the first trace inside the same save options, which the
save then finds in the cache. The functions saved are the same ones (`write_out`'s were
always the save's traces); an export takes about 40% less time (measured on a
text-classification pipeline: 17 s, 6.5 s of it the second trace).

The steps are those of `write_out` in the pinned keras (3.15): `_filter_and_track_resources`
(its variable listing and resource tracking), then `tf.saved_model.save` with every endpoint
as a signature and the first as `serving_default` when none has that name. They are private
APIs of keras and TensorFlow: `kbert._keras_private` guards both.
"""

import tensorflow as tf

from kbert import _keras_private


def write_archive(archive, path):
    """`archive.write_out(path, verbose=False)`, with one trace per endpoint."""
    _keras_private.guard("export_archive_internals")
    _keras_private.guard("tf_save_context")
    from tensorflow.python.saved_model import save_context

    names = list(archive._endpoint_names)
    if not names:
        raise ValueError("No endpoints have been set yet. Call add_endpoint().")
    options = tf.saved_model.SaveOptions()
    with save_context.save_context(options):
        archive._filter_and_track_resources()
    signatures = {name: archive._get_concrete_fn(name) for name in names}
    signatures.setdefault("serving_default", signatures[names[0]])
    tf.saved_model.save(archive._tf_trackable, str(path), options=options,
                        signatures=signatures)
    return path
