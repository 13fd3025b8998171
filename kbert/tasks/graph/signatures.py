"""What every exported signature shares: the input specs, running the model, the
`serving_ids` endpoint, the endpoint of one text per row, label names.
Packing wordpieces into model inputs is the tokenizer's `pack` (`kbert.tokenizers.packing`),
the fine-tuning data's own."""

import tensorflow as tf

from kbert.tasks.graph import packing
from kbert.tasks.task import default_label_names

STRINGS = tf.TensorSpec([None], tf.string)
IDS = tf.TensorSpec([None, None], tf.int32)


def run_model(model, features):
    """The Keras model on packed features (the names it takes), outputs in float32."""
    outputs = model({name: features[name] for name in model.input}, training=False)
    return tf.nest.map_structure(lambda x: tf.cast(x, tf.float32), outputs)


def dense_rows(values, rows, batch, default):
    """Flat `values` of the rows `rows` (int, non-decreasing) -> [batch, longest] padded with
    `default`."""
    ragged = tf.RaggedTensor.from_value_rowids(values, tf.cast(rows, tf.int64),
                                               nrows=tf.cast(batch, tf.int64), validate=False)
    return ragged.to_tensor(default)


def add_ids_endpoint(archive, model, serve):
    """`serving_ids`: `serve(features)` on ids made elsewhere (no `segment_ids` for
    DistilBERT)."""
    if "segment_ids" in model.input:
        def serve_ids(token_ids, segment_ids, padding_mask):
            return serve({"token_ids": token_ids, "segment_ids": segment_ids,
                          "padding_mask": padding_mask})

        archive.add_endpoint("serving_ids", serve_ids, [IDS, IDS, IDS])
    else:
        def serve_ids_without_segments(token_ids, padding_mask):
            return serve({"token_ids": token_ids, "padding_mask": padding_mask})

        archive.add_endpoint("serving_ids", serve_ids_without_segments, [IDS, IDS])


def single_text_endpoints(pipe, model, truncation, outputs, max_length=None):
    """`pipeline.export`'s `serving_default` of a pipeline on single texts (feature
    extraction, sentence embeddings): text -> `outputs(model outputs, features)`, the text
    fitted to the model as the pipeline fits it (too long: the call fails unless
    `truncation`)."""
    tokenizer = pipe.tokenizer

    def serve(text):
        first, _, checks = packing.fit_call(pipe, packing.ids(tokenizer, text), None,
                                            truncation, max_length)
        features = packing.pack(tokenizer, first)
        with tf.control_dependencies(checks):
            return outputs(run_model(model, features), features)

    return {"serving_default": (serve, [STRINGS])}


def label_names_of(model, label_names):
    """The export's `label_names`, else the model's, else transformers' "LABEL_<i>"."""
    names = label_names if label_names is not None else model.label_names
    if names is None:
        return default_label_names(model.num_classes)
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"`label_names` must be a list of strings, got {names!r}.")
    if len(names) != model.num_classes:
        raise ValueError(f"{len(names)} label_names for a model of {model.num_classes} "
                         f"classes.")
    return list(names)
