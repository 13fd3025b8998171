"""`pipeline.export(path, **options)`: a SavedModel whose `serving_default` takes raw strings
and returns the pipeline's answers, every step in the graph (tokenization, truncation, the
model, and the post-processing: softmax / sigmoid and ranking, NLI-to-label scoring, the
masked-token search and decoding (`kbert.tasks.fill_mask.pipeline_serving`), entities
(`kbert.tasks.token_classification.pipeline_serving`), answer spans over a context's windows
(`kbert.tasks.question_answering.pipeline_serving`)), so that TensorFlow Serving answers what
the pipeline answers. It loads with TensorFlow and tensorflow-text alone.

A pipeline's answer is a list of dicts; the SavedModel returns each key as a tensor with a
leading batch dimension, padded where rows differ in length (a `num_*` output says how many
entries of a row are real). The signatures of each task are in `export`'s docstring.
"""

import keras
import tensorflow as tf

from kbert.export.archive import write_archive
from kbert.tasks.graph.signatures import single_text_endpoints
from kbert.tasks.fill_mask.pipeline_serving import fill_mask
from kbert.tasks.question_answering.pipeline_serving import question_answering
from kbert.pipelines.model_source import KerasRunner
from kbert.tasks.token_classification.pipeline_serving import token_classification
from kbert.tasks.text_classification import serving as text_classification_serving
from kbert.tasks.text_embedding.serving import sentence_embeddings


def feature_extraction(pipe, model, opts, given):
    truncation, max_length = pipe.tokenization(opts, "tokenize_kwargs")

    def outputs(result, features):
        mask = tf.cast(features["padding_mask"], tf.float32)[:, :, None]
        return {"features": result["sequence_output"] * mask,
                "num_tokens": tf.reduce_sum(features["padding_mask"], axis=1)}

    return single_text_endpoints(pipe, model, truncation, outputs, max_length)


SERVINGS = {
    "text-classification": text_classification_serving.text_classification,
    "zero-shot-classification": text_classification_serving.zero_shot_classification,
    "feature-extraction": feature_extraction,
    "sentence-embeddings": sentence_embeddings,
    "fill-mask": fill_mask,
    "token-classification": token_classification,
    "question-answering": question_answering,
}


def export(pipe, path, options):
    """Writes `pipe`'s SavedModel to `path` (see `Pipeline.export`); returns `path`."""
    from kbert.export.saved_model import write_tokenizer_files

    if pipe.task not in SERVINGS:
        raise NotImplementedError(f"pipeline.export does not cover {pipe.task} yet; export "
                                  "the task model with kbert.export.export_saved_model.")
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
    write_tokenizer_files(pipe.tokenizer, path)
    return path
