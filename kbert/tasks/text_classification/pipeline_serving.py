"""Text classification's SavedModel endpoints (`pipeline.export`), raw strings in, every step
in the graph: `text_classification` ({"label", "score"} per text, as the pipeline ranks them)
and `zero_shot_classification` (NLI entailment over the candidate labels given at the call);
the rules on options are `decode`'s, the same the Python pipelines call."""

import functools

import tensorflow as tf

from kbert.tasks.graph import packing as graph
from kbert.tasks.graph.signatures import STRINGS, run_model
from kbert.tasks.text_classification import decode


def ranked(pipe, opts, given):
    """logits [B, N] -> {"label", "score"} [B, count] as the pipeline ranks them (`decode`'s
    rules on its options `opts`, `given` the ones the call named): the activation
    (`decode.apply`'s twin), in label order or best first (ties: the lower index first, as
    Python's stable sort)."""
    names = pipe.source.label_names
    top_k, legacy = pipe.ranking(opts, given)
    count, order = decode.ranked_count(top_k, legacy, len(names))
    function = {"softmax": tf.nn.softmax, "sigmoid": tf.sigmoid,
                "none": tf.identity}[pipe.function(opts)]

    def answer(logits):
        scores = function(logits)
        if order:
            scores, index = tf.math.top_k(scores, k=count)
        else:
            index = tf.broadcast_to(tf.range(count), tf.shape(scores))
        return {"label": tf.gather(tf.constant(names), index), "score": scores}

    return answer


def text_classification(pipe, model, opts, given):
    """`pipeline.export`'s endpoints of a text-classification pipeline `pipe` (its options
    `opts`, `given` the ones the call named): {name: (function, input specs)}."""
    answer = ranked(pipe, opts, given)
    truncation, max_length = pipe.tokenization(opts)
    tokenizer = pipe.tokenizer
    forward = functools.partial(run_model, model)
    if opts.get("early_exit") is not None:  # the pipeline's layer-by-layer forward, in the graph
        forward = pipe.exit_runner(opts["early_exit"]).forward

    def classify(first, second):
        first, second, checks = graph.fit_call(pipe, first, second, truncation, max_length)
        with tf.control_dependencies(checks):
            return answer(forward(graph.pack(tokenizer, first, second)))

    def serve(text):
        return classify(graph.ids(tokenizer, text), None)

    def serve_pairs(text, text_pair):
        ids = graph.ids(tokenizer, tf.concat([text, text_pair], 0))
        rows = tf.shape(text, out_type=tf.int64)[0]
        return classify(ids[:rows], ids[rows:])

    return {"serving_default": (serve, [STRINGS]),
            "serving_pairs": (serve_pairs, [STRINGS, STRINGS])}


def zero_shot_classification(pipe, model, opts, given):
    """`pipeline.export`'s endpoint of a zero-shot pipeline: the texts and the candidate
    labels in, {"sequence", "labels", "scores"} out, best first."""
    prefix, suffix = decode.template_parts(opts["hypothesis_template"])
    multi_label = pipe.multi_label(opts)
    entailment, contradiction = pipe.entailment, pipe.contradiction
    tokenizer, budget = pipe.tokenizer, pipe.max_length - pipe.special_count(True)

    def serve(sequences, candidate_labels):
        batch, count = tf.shape(sequences)[0], tf.shape(candidate_labels)[0]
        check = tf.debugging.Assert(
            (count > 0) & tf.reduce_all(tf.strings.length(sequences) > 0),
            ["You must include at least one label and at least one sequence."])
        hypotheses = tf.strings.join([prefix, candidate_labels, suffix])
        ids = graph.ids(tokenizer, tf.concat([sequences, hypotheses], 0))
        premises, hypothesis_ids = ids[:batch], ids[batch:]
        premise = tf.repeat(tf.range(batch), count)
        hypothesis = tf.tile(tf.range(count), [batch])
        first, second, checks = graph.fit(tf.gather(premises, premise),
                                          tf.gather(hypothesis_ids, hypothesis), budget,
                                          "only_first")
        with tf.control_dependencies([check, *checks]):
            logits = run_model(model, graph.pack(tokenizer, first, second))
        logits = tf.reshape(logits, [batch, count, -1])
        # Each label alone: entailment against contradiction (multi_label, or one label).
        alone = tf.nn.softmax(tf.gather(logits, [contradiction, entailment], axis=-1))[..., 1]
        scores = alone if multi_label else tf.where(
            count == 1, alone, tf.nn.softmax(logits[..., entailment]))
        # reversed(argsort): of equal scores, the later label first.
        order = tf.reverse(tf.argsort(scores, axis=-1, stable=True), axis=[-1])
        return {"sequence": sequences, "labels": tf.gather(candidate_labels, order),
                "scores": tf.gather(scores, order, batch_dims=1)}

    return {"serving_default": (serve, [STRINGS, STRINGS])}


PIPELINES = {"text-classification": text_classification,
             "zero-shot-classification": zero_shot_classification}
