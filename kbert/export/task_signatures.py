"""Serving signatures of the fine-tuning task models (`kbert.tasks`): raw strings in, what a
user wants out (labels and probabilities, entities, answers, embeddings).

`kbert.export.export_saved_model` calls `task_archive` when its model is a `kbert.tasks.Task`.
Everything between the strings and the answers runs in the graph (tensorflow-text's ops and
TensorFlow's), so that the SavedModel loads with TensorFlow and tensorflow-text alone; the
predictions equal the Keras model's decoded by `kbert.data` in Python (tested).
"""

import keras
import tensorflow as tf

from kbert.data.task_features import pack_segments
from kbert.tasks.question_answering.serving import add_question_answerer_endpoints
from kbert.tasks.graph.signatures import STRINGS, add_ids_endpoint, label_names_of, run_model
from kbert.export.tagging_signatures import add_token_classifier_endpoints
from kbert.tasks import QuestionAnswerer, TextClassifier, TextEmbedder, TokenClassifier

# Arguments of export_saved_model that only some tasks take; None: not given.
# A string constant in a classifier's serve graph where its one output has no stated
# problem type (see `_classifier`).
UNSTATED_ONE_OUTPUT = ("kbert", "problem_type not stated")

TASK_OPTIONS = {
    "label_names": (TextClassifier, TokenClassifier),
    "tag_scheme": (TokenClassifier,),
    "version_2": (QuestionAnswerer,),
    "null_threshold": (QuestionAnswerer,),
    "doc_stride": (QuestionAnswerer,),
    "max_answer_length": (QuestionAnswerer,),
    "max_question_length": (QuestionAnswerer,),
    "n_best": (QuestionAnswerer,),
}


def classification_outputs(model, logits, names):
    """Logits [B, N] -> the classifier's named outputs (see `export_saved_model`)."""
    if model.problem_type == "regression":
        return {"score": logits[:, 0]}
    names = tf.constant(names)
    multi_label = model.problem_type == "multi_label"
    probabilities = tf.sigmoid(logits) if multi_label else tf.nn.softmax(logits)
    label_id = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
    outputs = {"label": tf.gather(names, label_id), "label_id": label_id,
               "probabilities": probabilities, "logits": logits}
    if multi_label:
        chosen = probabilities > 0.5  # [B, N]
        # The chosen classes first, in class order; "" after them.
        order = tf.argsort(tf.cast(~chosen, tf.int32), axis=-1, stable=True)
        outputs["labels"] = tf.where(tf.gather(chosen, order, batch_dims=1),
                                     tf.gather(names, order), "")
        outputs["num_labels"] = tf.reduce_sum(tf.cast(chosen, tf.int32), axis=-1)
    return outputs


def _classifier(archive, model, tokenizer, sequence_length, label_names):

    names = label_names_of(model, label_names) if model.problem_type != "regression" else None

    def serve(features):
        if model.problem_type == "regression" and not model.problem_type_declared:
            # A mark read by kbert.pipelines.saved_model_source: one output and no stated
            # problem type, which transformers' pipeline scores by a sigmoid.
            tf.constant(UNSTATED_ONE_OUTPUT, name="unstated_problem_type")
        return classification_outputs(model, run_model(model, features), names)

    def serve_text(text):
        return serve(pack_segments(tokenizer, [tokenizer.tokenize(text)], sequence_length))

    def serve_pairs(text_a, text_b):
        # One tokenizer call for both segments: half the graph to build.
        ids = tokenizer.tokenize(tf.concat([text_a, text_b], 0))
        rows = tf.shape(text_a, out_type=tf.int64)[0]
        return serve(pack_segments(tokenizer, [ids[:rows], ids[rows:]], sequence_length))

    archive.add_endpoint("serving_default", serve_text, [STRINGS])
    archive.add_endpoint("serving_pairs", serve_pairs, [STRINGS, STRINGS])
    add_ids_endpoint(archive, model, serve)


def _embedder(archive, model, tokenizer, sequence_length):

    def serve(features):
        return {"embedding": run_model(model, features)}

    def serve_text(text):
        return serve(pack_segments(tokenizer, [tokenizer.tokenize(text)], sequence_length))

    archive.add_endpoint("serving_default", serve_text, [STRINGS])
    add_ids_endpoint(archive, model, serve)


def task_archive(model, tokenizer, sequence_length, **options):
    """A `keras.export.ExportArchive` with the signatures of the task model `model`.

    `options`: the task arguments of `export_saved_model` (None: not given; a given one
    that is not for this task is an error).
    """
    for name, value in options.items():
        tasks = TASK_OPTIONS[name]
        if value is not None and not isinstance(model, tasks):
            raise ValueError(f"`{name}` is for a {' or '.join(c.__name__ for c in tasks)}, "
                             f"not a {type(model).__name__}.")
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(tokenizer)
    if isinstance(model, TextClassifier):
        _classifier(archive, model, tokenizer, sequence_length, options.get("label_names"))
    elif isinstance(model, TokenClassifier):
        add_token_classifier_endpoints(archive, model, tokenizer, sequence_length,
                                       options.get("label_names"), options.get("tag_scheme"))
    elif isinstance(model, QuestionAnswerer):
        add_question_answerer_endpoints(
            archive, model, tokenizer, sequence_length,
            **{k: options.get(k) for k, tasks in TASK_OPTIONS.items()
               if tasks == (QuestionAnswerer,)})
    elif isinstance(model, TextEmbedder):
        _embedder(archive, model, tokenizer, sequence_length)
    else:
        raise TypeError(f"export_saved_model has no signatures for {type(model).__name__}.")
    return archive
