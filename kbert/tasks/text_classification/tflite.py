"""Text classification's TFLite graphs (TFLite's built-in ops and tensorflow-text's kernels
only), of both contracts:

- kbert's (`kbert.serving.export_tflite` of a `TextClassifier`): `model_outputs`
  (`label`, `label_id`, `probabilities`, `logits`; regression: `score`; multi-label: every
  class name in `labels`, the chosen first, and `num_labels`), from a text or a pair
  (`model_endpoints`);
- transformers' (`pipeline.export_tflite`): `text_classification` ({"label", "score"} as the
  pipeline ranks them) and `zero_shot_classification` (the candidate labels and template fixed
  at export: `labels`, `scores` best first and `label_scores` in the labels' order).

The caller (`kbert.export` / `kbert.pipelines`) writes the model
(`kbert.tasks.graph.tflite_serving` says what each function gives).
"""

import tensorflow as tf

from kbert.tasks.graph import tflite_serving
from kbert.tasks.graph.signatures import STRINGS, label_names_of, run_model
from kbert.tasks.graph.tflite_packing import pack_pairs, pack_premises, pack_text
from kbert.tasks.text_classification import decode
from kbert.tasks.text_classification.pipeline_serving import activation, scored


def classification_outputs(model, logits, names):
    """Logits [B, N] -> the classifier's named outputs (see `export_tflite`)."""
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


def model_outputs(model, label_names):
    """features -> a `TextClassifier`'s named outputs in TFLite."""
    names = label_names_of(model, label_names) if model.problem_type != "regression" \
        else None

    def classify(features):
        outputs = classification_outputs(model, run_model(model, features), names)
        if "labels" in outputs:
            # TFLite selects no strings: every class name, the chosen (the first
            # `num_labels`) first, where the SavedModel has "" after the chosen.
            chosen = outputs["probabilities"] > 0.5
            order = tf.argsort(tf.where(chosen, 0, 1), axis=-1, stable=True)
            outputs["labels"] = tf.gather(tf.constant(names), order)
        return outputs

    return classify


def model_endpoints(model, tokenizer, fast, sequence_length, outputs, options):
    """`serving_default` (`text`) and `serving_pairs` (`text_a`, `text_b`, trimmed
    round-robin) -> `outputs`."""

    def serve_pairs(text_a, text_b):
        # Two tokenizer calls: TFLite concatenates no strings.
        return outputs(pack_pairs(tokenizer, fast.tokenize(text_a), fast.tokenize(text_b),
                                  sequence_length))

    return {**tflite_serving.text_endpoint(tokenizer, fast, sequence_length, outputs),
            "serving_pairs": (serve_pairs, [STRINGS, STRINGS])}


def text_classification(pipe, model, opts, given):
    """(fast, endpoints): a text-classification pipeline's TFLite tokenizer and its
    `serving_default` (texts cut to `max_length` tokens, at most the model's)."""
    truncation, max_length = pipe.tokenization(opts)
    tflite_serving.truncating(pipe, truncation)
    length = tflite_serving.length(pipe, max_length)
    names = pipe.source.label_names
    top_k, legacy = pipe.ranking(opts, given)
    count, order = decode.ranked_count(top_k, legacy, len(names))
    function = activation(pipe.function(opts))
    fast = tflite_serving.fast_tokenizer(pipe)

    def serve(text):
        features = pack_text(pipe.tokenizer, fast.tokenize(text), length)
        label, score = scored(function(run_model(model, features)), names, order, count)
        return {"label": label, "score": score}

    return fast, {"serving_default": (serve, [STRINGS])}


def zero_shot_classification(pipe, model, opts, given):
    """(fast, endpoints): a zero-shot pipeline's TFLite tokenizer and its `serving_default`,
    the candidate labels and the template fixed at export."""
    labels = opts["candidate_labels"] or []
    if isinstance(labels, str):  # "a, b": comma-separated, as the pipeline takes it
        labels = [label.strip() for label in labels.split(",") if label.strip()]
    if not labels or not all(isinstance(label, str) and label for label in labels):
        raise ValueError(
            f"candidate_labels={opts['candidate_labels']!r}: a TFLite zero-shot classifier "
            f"fixes its labels at export (TFLite joins no strings); pass "
            f"candidate_labels=[...] (one or more non-empty strings) to export_tflite.")
    prefix, suffix = decode.template_parts(opts["hypothesis_template"])
    multi_label = pipe.multi_label(opts) or len(labels) == 1
    entailment, contradiction = pipe.entailment, pipe.contradiction
    # The hypotheses are fixed: tokenized here by kbert's tokenizer, as the pipeline does.
    hypotheses = pipe.encoder.ids([prefix + label + suffix for label in labels], pipe.specials)
    budget = pipe.max_length - pipe.special_count(True)
    for label, ids in zip(labels, hypotheses):
        if len(ids) >= budget:
            raise ValueError(f"The hypothesis of candidate label {label!r} is {len(ids)} "
                             f"tokens long: no room for the text in {pipe.max_length}.")
    names = tf.constant(labels)
    count = len(labels)
    fast = tflite_serving.fast_tokenizer(pipe)

    def serve(text):
        features = pack_premises(pipe.tokenizer, fast.tokenize(text),
                                 [ids.tolist() for ids in hypotheses], pipe.max_length)
        logits = tf.reshape(tf.cast(run_model(model, features), tf.float32),
                            [-1, count, model.num_classes])
        if multi_label:  # each label alone: entailment against contradiction
            scores = tf.nn.softmax(tf.gather(logits, [contradiction, entailment],
                                             axis=-1))[..., 1]
        else:
            scores = tf.nn.softmax(logits[..., entailment])
        # Best first; of equal scores the later label first (the pipeline's reversed
        # argsort): top_k on the labels reversed, which puts the lower index first.
        best, index = tf.math.top_k(tf.reverse(scores, axis=[-1]), k=count)
        order = count - 1 - index
        return {"labels": tf.gather(names, order), "scores": best,
                "label_scores": scores}

    return fast, {"serving_default": (serve, [STRINGS])}


# `pipeline.export_tflite` of each pipeline of the task.
PIPELINES = {"text-classification": text_classification,
             "zero-shot-classification": zero_shot_classification}
