"""Text classification's SavedModel signatures, of both contracts: raw strings in, every step in
the graph (tokenization, packing, the model, the scores), so that the SavedModel loads with
TensorFlow and tensorflow-text alone.

- kbert's (`kbert.serving.export_saved_model` of a `TextClassifier`):
  `add_endpoints`: `serving_default` (text), `serving_pairs`, `serving_ids`, with
  `classification_outputs` (label, label_id, probabilities, logits; regression: score;
  multi-label: labels, num_labels).
- transformers' (`pipeline.export`): in `pipeline_serving`.

The rules on options are `decode`'s, the same the Python pipelines call.
"""

import tensorflow as tf

from kbert.tasks.graph.signatures import STRINGS, add_ids_endpoint, label_names_of, run_model

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


def add_endpoints(archive, model, tokenizer, sequence_length, label_names=None):
    """A `TextClassifier`'s `serving_default`, `serving_pairs` and `serving_ids` on the
    ExportArchive `archive` (kbert's contract)."""
    names = label_names_of(model, label_names) if model.problem_type != "regression" else None

    def serve(features):
        return classification_outputs(model, run_model(model, features), names)

    def serve_text(text):
        return serve(tokenizer.pack([tokenizer.tokenize(text)], sequence_length))

    def serve_pairs(text_a, text_b):
        # One tokenizer call for both segments: half the graph to build.
        ids = tokenizer.tokenize(tf.concat([text_a, text_b], 0))
        rows = tf.shape(text_a, out_type=tf.int64)[0]
        return serve(tokenizer.pack([ids[:rows], ids[rows:]], sequence_length))

    archive.add_endpoint("serving_default", serve_text, [STRINGS])
    archive.add_endpoint("serving_pairs", serve_pairs, [STRINGS, STRINGS])
    add_ids_endpoint(archive, model, serve)
