"""Feature extraction in TFLite (TFLite's built-in ops and tensorflow-text's kernels): the
backbone's hidden states, for `kbert.serving.export_tflite` of a backbone or a pretrainer
(its backbone: `model_outputs`, `model_endpoints`) and `pipeline.export_tflite` of
feature-extraction (`PIPELINES`). See `kbert.tasks.graph.tflite_serving`.
"""

import tensorflow as tf

from kbert.tasks.feature_extraction.pipeline_serving import masked_states
from kbert.tasks.graph import tflite_serving
from kbert.tasks.graph.signatures import run_model

BACKBONE_OUTPUTS = ("sequence_output", "pooled_output")


def model_outputs(backbone, label_names):
    """features (ids in) -> the backbone's `sequence_output` and `pooled_output` (none for
    DistilBERT, which has no pooler)."""

    def hidden(features):
        outputs = run_model(backbone, features)
        return {name: outputs[name] for name in BACKBONE_OUTPUTS if name in outputs}

    return hidden


def model_endpoints(backbone, tokenizer, fast, sequence_length, outputs, options):
    """`serving_default`: `text` -> `outputs` and the `padding_mask` that says which positions
    are text."""

    def with_mask(features):
        result = outputs(features)
        result["padding_mask"] = features["padding_mask"]
        return result

    return tflite_serving.text_endpoint(tokenizer, fast, sequence_length, with_mask)


def feature_extraction(pipe, model, opts, given):
    """(fast, endpoints) of a feature-extraction pipeline: `text` -> `features` (zero past
    the text), `padding_mask` and `num_tokens`."""
    truncation, max_length = pipe.tokenization(opts, "tokenize_kwargs")

    def outputs(result, features):
        mask = features["padding_mask"]
        return {"features": masked_states(result["sequence_output"], mask),
                "padding_mask": mask, "num_tokens": tf.reduce_sum(mask, axis=1)}

    return tflite_serving.single_texts(pipe, model, truncation, outputs, max_length)


# `pipeline.export_tflite` of each pipeline of the task.
PIPELINES = {"feature-extraction": feature_extraction}
