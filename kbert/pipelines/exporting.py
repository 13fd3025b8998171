"""`pipeline.export(path, **options)`: a SavedModel whose `serving_default` takes raw strings
and returns the pipeline's answers, every step in the graph (tokenization, truncation, the
model, and the post-processing: softmax / sigmoid and ranking, NLI-to-label scoring, the
masked-token search and decoding, entities, answer spans over a context's windows: each
task folder's `pipeline_serving`, found through its record), so that TensorFlow Serving
answers what the pipeline answers. It loads with TensorFlow and tensorflow-text alone.

A pipeline's answer is a list of dicts; the SavedModel returns each key as a tensor with a
leading batch dimension, padded where rows differ in length (a `num_*` output says how many
entries of a row are real). The signatures of each task are in `export`'s docstring.
"""

import keras

from kbert.export.archive import write_archive
from kbert.pipelines.model_source import KerasRunner
from kbert.tasks import registry

# Pipeline name -> its task folder's `pipeline_serving.PIPELINES` entry, for every pipeline of
# a task that exports to a SavedModel (a LookupError here: a task record says it exports and
# its folder has no function for it).
SERVINGS = {name: registry.get(name).pipeline_export(name, "saved_model")
            for name in registry.pipeline_names(export="saved_model")}


def export(pipe, path, options):
    """Writes `pipe`'s SavedModel to `path` (see `Pipeline.export`); returns `path`."""
    from kbert.export.saved_model import write_tokenizer_files

    if pipe.task not in SERVINGS:
        raise NotImplementedError(f"pipeline.export covers {', '.join(SERVINGS)}, not "
                                  f"{pipe.task!r}; export the task model with "
                                  "kbert.export.export_saved_model.")
    if not isinstance(pipe.source.runner, KerasRunner):
        raise ValueError(f"pipeline.export needs a pipeline on a kbert model or checkpoint; "
                         f"this one runs {pipe.source.name}, which is already a SavedModel.")
    model = pipe.source.runner.model
    opts, given = pipe.options(options)
    endpoints = SERVINGS[pipe.task](pipe, model, opts, given)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(pipe.tokenizer)
    for name, (function, specs) in endpoints.items():
        archive.add_endpoint(name, function, specs)
    write_archive(archive, path)
    write_tokenizer_files(pipe.tokenizer, path, pipe.max_length)
    return path
