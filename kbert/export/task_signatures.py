"""Serving signatures of the fine-tuning task models (`kbert.tasks`): raw strings in, what a
user wants out (labels and probabilities, entities, answers, embeddings).

`kbert.export.export_saved_model` calls `task_archive` when its model is a `kbert.tasks.Task`.
Everything between the strings and the answers runs in the graph (tensorflow-text's ops and
TensorFlow's), so that the SavedModel loads with TensorFlow and tensorflow-text alone; the
predictions equal the Keras model's decoded by its task folder's `decode` in Python
(tested).
"""

import keras

from kbert.tasks.question_answering.serving import add_question_answerer_endpoints
from kbert.tasks.token_classification.serving import add_token_classifier_endpoints
from kbert.tasks import QuestionAnswerer, TextClassifier, TextEmbedder, TokenClassifier
from kbert.tasks.text_classification.serving import add_classifier_endpoints
from kbert.tasks.text_embedding.serving import add_embedder_endpoints

# Arguments of export_saved_model that only some tasks take; None: not given.
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
        add_classifier_endpoints(archive, model, tokenizer, sequence_length,
                                 options.get("label_names"))
    elif isinstance(model, TokenClassifier):
        add_token_classifier_endpoints(archive, model, tokenizer, sequence_length,
                                       options.get("label_names"), options.get("tag_scheme"))
    elif isinstance(model, QuestionAnswerer):
        add_question_answerer_endpoints(
            archive, model, tokenizer, sequence_length,
            **{k: options.get(k) for k, tasks in TASK_OPTIONS.items()
               if tasks == (QuestionAnswerer,)})
    elif isinstance(model, TextEmbedder):
        add_embedder_endpoints(archive, model, tokenizer, sequence_length)
    else:
        raise TypeError(f"export_saved_model has no signatures for {type(model).__name__}.")
    return archive
