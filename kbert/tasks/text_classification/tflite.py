"""Text classification in TFLite (`kbert.tasks.graph.tflite_serving` says what a task
folder's `tflite.py` gives): the pipelines' answers, `text_classification` ({"label",
"score"} as the pipeline ranks them, of a text or a pair) and `zero_shot_classification` (the
candidate labels and template fixed at export)."""

import tensorflow as tf

from kbert.tasks.graph import tflite_serving
from kbert.tasks.graph.signatures import STRINGS, run_model
from kbert.tasks.graph.tflite_packing import pack_pairs, pack_premises, pack_text
from kbert.tasks.text_classification import decode
from kbert.tasks.text_classification.pipeline_serving import ranked


def text_classification(pipe, model, opts, given):
    """(fast, endpoints, length): a text-classification pipeline's TFLite tokenizer, its
    `serving_default` (`text`) and `serving_pairs` (`text`, `text_pair`), texts cut to
    `max_length` tokens, at most the model's."""
    truncation, max_length = pipe.tokenization(opts)
    tflite_serving.truncating(pipe, truncation)
    length = tflite_serving.length(pipe, max_length)
    answer = ranked(pipe, opts, given)
    fast = pipe.tokenizer.tflite_tokenizer()

    def serve(text):
        return answer(run_model(model, pack_text(pipe.tokenizer, fast.tokenize(text), length)))

    def serve_pairs(text, text_pair):
        # Two tokenizer calls: TFLite concatenates no strings.
        features = pack_pairs(pipe.tokenizer, fast.tokenize(text), fast.tokenize(text_pair),
                              length)
        return answer(run_model(model, features))

    return fast, {"serving_default": (serve, [STRINGS]),
                  "serving_pairs": (serve_pairs, [STRINGS, STRINGS])}, length


def zero_shot_classification(pipe, model, opts, given):
    """(fast, endpoints, length): a zero-shot pipeline's TFLite tokenizer and its
    `serving_default`, the candidate labels and the template fixed at export: `labels`,
    `scores` best first and `label_scores` in the labels' order."""
    labels = decode.parse_labels(opts["candidate_labels"] or [])  # "a, b" as the pipeline
    if not labels or not all(isinstance(label, str) and label for label in labels):
        raise ValueError(
            f"candidate_labels={opts['candidate_labels']!r}: a TFLite zero-shot classifier "
            f"fixes its labels at export (TFLite joins no strings); pass "
            f"candidate_labels=[...] (one or more non-empty strings) to the export.")
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
    fast = pipe.tokenizer.tflite_tokenizer()

    def serve(text):
        features = pack_premises(pipe.tokenizer, fast.tokenize(text),
                                 [ids.tolist() for ids in hypotheses], pipe.max_length)
        logits = tf.reshape(run_model(model, features), [-1, count, model.num_classes])
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

    return fast, {"serving_default": (serve, [STRINGS])}, pipe.max_length


PIPELINES = {"text-classification": text_classification,
             "zero-shot-classification": zero_shot_classification}
