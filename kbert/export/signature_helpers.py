"""What every exported signature shares: packing wordpieces into model inputs in the graph,
the input specs, running the model, the `serving_ids` endpoint, label names."""

import tensorflow as tf
import tensorflow_text as tf_text

from kbert.tasks.task import default_label_names


def pack(tokenizer, segments, sequence_length):
    """[CLS] A [SEP] (B [SEP]) from ragged wordpiece ids, trimmed round-robin and padded.

    Args:
        tokenizer: gives the special ids.
        segments: one or two `tf.RaggedTensor`s [batch, (pieces)] of int32 ids.
        sequence_length: the padded length; longer inputs are truncated.

    Returns:
        A dict of int32 [batch, sequence_length] tensors: `token_ids`, `segment_ids`,
        `padding_mask`.
    """
    budget = sequence_length - 1 - len(segments)  # [CLS] and one [SEP] per segment
    trimmed = tf_text.RoundRobinTrimmer(max_seq_length=budget).trim(list(segments))
    ids, segment_ids = tf_text.combine_segments(
        trimmed, start_of_sequence_id=tokenizer.cls_id, end_of_segment_id=tokenizer.sep_id
    )
    token_ids, padding_mask = tf_text.pad_model_inputs(
        ids, max_seq_length=sequence_length, pad_value=tokenizer.pad_id
    )
    segment_ids, _ = tf_text.pad_model_inputs(segment_ids, max_seq_length=sequence_length)
    return {
        "token_ids": tf.cast(token_ids, tf.int32),
        "segment_ids": tf.cast(segment_ids, tf.int32),
        "padding_mask": tf.cast(padding_mask, tf.int32),
    }


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
