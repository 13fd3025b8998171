"""Feature extraction in TFLite (TFLite's built-in ops and tensorflow-text's kernels): the
backbone's hidden states (`PIPELINES`). See `kbert.tasks.graph.tflite_serving`.
"""

import tensorflow as tf

from kbert.tasks.feature_extraction.pipeline_serving import masked_states
from kbert.tasks.graph import tflite_serving


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
