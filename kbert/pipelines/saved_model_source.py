"""A SavedModel exported by kbert (`kbert.export`) as a pipeline's model: the pipeline
tokenizes in Python, as for any model, and runs its `serving_ids` (ids in, raw outputs out),
so that every pipeline option works as on the Keras model. What the model is (its kind,
label names, problem type, longest input, a summarizer's windows and segments) is what its
`export.json` states (`kbert.serving.metadata`); a SavedModel without one is refused."""

import numpy as np

from kbert import loading
from kbert.pipelines.model_source import SERVES, Source
from kbert.tasks.graph.signatures import RAW_OUTPUTS
from kbert.tasks.task import default_label_names


def from_saved_model(path, tokenizer, task, trusted):
    """A `Source` running an exported SavedModel's `serving_ids`."""
    import tensorflow as tf

    from kbert.serving import metadata

    found = loading.source(path, trusted=trusted)
    loaded = found.build()  # checked first (kbert.untrusted): a hostile graph is refused
    meta = metadata.read(path)
    if meta is None:
        raise ValueError(f"The SavedModel {path} has no {metadata.FILE}: pipelines run kbert's "
                         "exports, which state their task there. Export the model again "
                         "with kbert.export (or model.export).")
    if meta.get("runtime") != "saved_model" or meta.get("model") not in SERVES:
        raise ValueError(f"The export {path} states a {meta.get('model')!r} model in a "
                         f"{meta.get('runtime')!r} file: a pipeline runs the SavedModel of "
                         f"one of {', '.join(SERVES)}.")
    signatures = dict(loaded.signatures)
    if "serving_ids" not in signatures:
        raise ValueError(f"The SavedModel {path} has no serving_ids signature (signatures: "
                         f"{sorted(signatures)}): a {meta['task']} export a pipeline cannot "
                         "run.")
    serving_ids = signatures["serving_ids"]
    outputs = serving_ids.structured_outputs
    inputs = list(serving_ids.structured_input_signature[1])
    max_length = meta.get("max_length") or found.max_sequence_length or 512

    # The outputs the pipelines read, as the Keras model returns them (the export's names).
    wanted = RAW_OUTPUTS.get(meta["model"])

    def runner(features):
        result = serving_ids(**{k: tf.constant(features[k], tf.int32) for k in inputs})
        if wanted is None:  # a dict: QA's start / end logits, a backbone's outputs
            return {k: np.asarray(v.numpy(), np.float32) for k, v in result.items()}
        return np.asarray(result[wanted].numpy(), np.float32)

    width = outputs["logits"].shape[-1] if "logits" in outputs else None
    return described(meta, path, "SavedModel", runner, tokenizer or found.tokenizer(), task,
                     width, max_length)


def described(meta, path, what, runner, tokenizer, task, width, max_length):
    """The `Source` of the export at `path` (a `what`: "SavedModel", "ONNX export") that
    `meta` (its export.json) describes, run by `runner`; `width`: its logits' last dimension
    (None: no logits). A ValueError where the metadata contradicts the model or itself."""
    kind = meta["model"]
    label_names, problem_type = meta.get("label_names"), meta.get("problem_type")
    if kind in ("text_classifier", "token_classifier") and problem_type != "regression":
        if label_names is None:
            label_names = default_label_names(int(width))
        elif width is not None and len(label_names) != width:
            raise ValueError(f"The {what} {path} states {len(label_names)} label names "
                             f"for {width} outputs: its export.json does not describe it.")
    windows, segments = meta.get("windows"), meta.get("segments")
    if kind == "extractive_summarizer":
        from kbert.tasks.extractive_summarization.model import SEGMENTS, WINDOWS

        if windows not in WINDOWS or segments not in SEGMENTS:
            raise ValueError(f"The {what} {path} states windows {windows!r} and segments "
                             f"{segments!r}: windows must be one of {WINDOWS}, segments one "
                             f"of {SEGMENTS}.")
    # The export of a task model returns its predictions, not the backbone's hidden states.
    serves = [t for t in SERVES[kind] if t != "feature-extraction" or kind == "backbone"]
    return Source(runner, tokenizer, kind, f"the {what} {path}", max_length,
                  label_names=label_names, problem_type=problem_type, serves=serves,
                  windows=windows, segments=segments,
                  options=meta.get("options") if meta.get("task") == task else None)
