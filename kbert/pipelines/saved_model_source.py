"""A SavedModel written by `kbert.export.export_saved_model` as a pipeline's model.

The pipeline tokenizes in Python, as for any model, and runs the SavedModel's `serving_ids`
signature (ids in, the model's raw outputs out), so that every pipeline option works as on
the Keras model. `kbert.loading` (the one loader) loads it, checked, and reads its tokenizer
(the files the export wrote beside it: `SavedModelSource.tokenizer`). What the directory
does not state is read from what it holds:
- the kind of model: the outputs of `serving_ids`;
- a classifier's label names: the string constant of that many names in its signatures'
  graphs (the export writes them there), else transformers' "LABEL_<i>";
- a one-output classifier's problem type: a regression, unless the export marked it as not
  stated (`UNSTATED_ONE_OUTPUT`), which transformers' pipeline scores by a sigmoid, as a
  checkpoint without `problem_type` is;
- an extractive summarizer's `windows` and `segments` settings and the length its documents
  are cut at: the string constant its export writes (`kbert.tasks.extractive_summarization.
  serving.summary_mark`; one written before `segments` existed states none: "sentence"); an
  export without it is refused;
- the longest input: the position-embedding table's rows (a summarizer's: the length its
  mark states).
"""

import numpy as np

from kbert import loading
from kbert.pipelines.model_source import SERVES, Source
from kbert.tasks.task import default_label_names


def _kind(outputs, signatures, subject="The SavedModel"):
    if "start_logits" in outputs:
        return "question_answerer"
    if set(outputs) == {"logits", "scores"}:
        return "extractive_summarizer"
    if set(outputs) == {"scores"}:
        raise _earlier_summarizer(subject, "its serving_ids returns scores alone")
    if "embedding" in outputs:
        return "text_embedder"
    if "sequence_output" in outputs:
        return "backbone"
    if "probabilities" in outputs or set(outputs) == {"score"}:
        return "text_classifier"
    if set(outputs) == {"logits"}:
        return "token_classifier"
    raise ValueError(f"The SavedModel's serving_ids returns {sorted(outputs)}: no kbert export "
                     f"a pipeline knows (signatures: {sorted(signatures)}).")


def _string_constants(function):
    """The string constants of a concrete function's graph and the functions it calls."""
    import tensorflow as tf

    graph = function.graph.as_graph_def()
    nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
    out = []
    for node in nodes:
        if node.op == "Const" and node.attr["dtype"].type == 7:  # DT_STRING
            value = tf.make_ndarray(node.attr["value"].tensor)
            if value.ndim == 1:
                out.append([v.decode("utf-8", "replace") for v in value])
    return out


def _label_names(loaded, kind, count):
    names = "serving_ids" if kind == "text_classifier" else "serving_default"
    found = [c for c in _string_constants(loaded.signatures[names])
             if len(c) == count and all(c)]
    distinct = {tuple(c) for c in found}
    if len(distinct) == 1:
        return list(distinct.pop())
    return default_label_names(count)


def _unstated(loaded):
    """Whether the export marked its one-output classifier as having no stated problem type
    (`kbert.tasks.text_classification.serving.UNSTATED_ONE_OUTPUT`)."""
    from kbert.tasks.text_classification.serving import UNSTATED_ONE_OUTPUT

    return list(UNSTATED_ONE_OUTPUT) in _string_constants(loaded.signatures["serving_ids"])


def _summary_settings(loaded, path, positions):
    """(windows, segments, sequence length) of an extractive summarizer's export (its mark),
    checked: a known `windows` and `segments`, a length from 4 to the model's `positions`
    (None: unknown)."""
    from kbert.tasks.extractive_summarization.model import SEGMENTS, WINDOWS
    from kbert.tasks.extractive_summarization.serving import SUMMARY_MARK

    for constant in _string_constants(loaded.signatures["serving_ids"]):
        found = len(constant) == 2 and constant[0] == "kbert" and SUMMARY_MARK.fullmatch(
            constant[1])
        if not found:
            continue
        windows, length = found.group(1), int(found.group(2))
        segments = found.group(3) or "sentence"  # exported before `segments` existed
        if (windows not in WINDOWS or segments not in SEGMENTS
                or not 4 <= length <= (positions or length)):
            raise ValueError(f"The SavedModel {path} marks its summaries as windows "
                             f"{windows!r} of {length} tokens, segments by {segments!r}: "
                             f"windows must be one of {WINDOWS}, segments one of {SEGMENTS} "
                             f"and the length from 4 to the model's {positions} positions.")
        return windows, segments, length
    raise _earlier_summarizer(f"The SavedModel {path}",
                              "it lacks the mark of its windows and length")


def _earlier_summarizer(subject, why):
    """The refusal of an extractive summarizer's export from an earlier kbert; `subject`:
    how the message names the SavedModel ("The SavedModel PATH")."""
    return ValueError(f"{subject} is an extractive summarizer's from an earlier kbert ({why}): "
                      "export it again with this one for the pipeline.")


def from_saved_model(path, tokenizer, task, trusted):
    """A `Source` running an exported SavedModel's `serving_ids`."""
    import tensorflow as tf

    found = loading.source(path, trusted=trusted)
    loaded = found.build()
    signatures = dict(loaded.signatures)
    if "serving_ids" not in signatures:
        raise ValueError(f"The SavedModel {path} has no serving_ids signature (signatures: "
                         f"{sorted(signatures)}): pipelines run kbert's exports.")
    serving_ids = signatures["serving_ids"]
    outputs = serving_ids.structured_outputs
    inputs = list(serving_ids.structured_input_signature[1])
    kind = _kind(outputs, signatures, f"The SavedModel {path}")
    name = f"the SavedModel {path}"
    if task == "fill-mask" and "fill_mask" in signatures:
        raise ValueError(
            f"fill-mask cannot run on {name}: its fill_mask signature returns only its own "
            "top-k tokens. Load the pretrainer's checkpoint (kbert.convert) instead.")
    label_names, problem_type = None, None
    if kind == "text_classifier":
        problem_type = ("regression" if "score" in outputs else
                        "multi_label" if "labels" in outputs else "single_label")
        count = 1 if problem_type == "regression" else int(outputs["logits"].shape[-1])
        label_names = _label_names(loaded, kind, count)
        if problem_type == "regression" and _unstated(loaded):
            problem_type = None  # as the checkpoint's: scored by a sigmoid (transformers')
    elif kind == "token_classifier":
        label_names = _label_names(loaded, kind, int(outputs["logits"].shape[-1]))
    windows, segments, max_length = None, None, found.max_sequence_length or 512
    if kind == "extractive_summarizer":
        windows, segments, max_length = _summary_settings(loaded, path,
                                                          found.max_sequence_length)

    # The outputs the pipelines read, as the Keras model returns them.
    wanted = {"text_classifier": "logits" if "logits" in outputs else "score",
              "token_classifier": "logits", "text_embedder": "embedding",
              "extractive_summarizer": "logits"}.get(kind)

    def runner(features):
        result = serving_ids(**{k: tf.constant(features[k], tf.int32) for k in inputs})
        if wanted is None:  # a dict: QA's start / end logits, a backbone's outputs
            return {k: np.asarray(v.numpy(), np.float32) for k, v in result.items()}
        value = np.asarray(result[wanted].numpy(), np.float32)
        return value[:, None] if wanted == "score" else value

    # The export of a task model returns its predictions, not the backbone's hidden states.
    serves = [t for t in SERVES[kind] if t != "feature-extraction" or kind == "backbone"]
    source = Source(runner, tokenizer or found.tokenizer(), kind, name,
                    max_length, label_names=label_names,
                    problem_type=problem_type, serves=serves, windows=windows,
                    segments=segments)
    return source
