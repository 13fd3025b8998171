"""Feature extraction in TFLite: the backbone's hidden states (`PIPELINES`). See
`kbert.tasks.graph.tflite_serving`."""

from kbert.tasks.feature_extraction.pipeline_serving import hidden_states
from kbert.tasks.graph import tflite_serving


def feature_extraction(pipe, model, opts, given):
    """(fast, endpoints, length) of a feature-extraction pipeline: `text` -> `features`,
    `num_tokens` (as the SavedModel's) and `padding_mask`."""
    truncation, max_length = pipe.tokenization(opts, "tokenize_kwargs")
    return tflite_serving.single_texts(
        pipe, model, truncation, lambda result, features: {
            **hidden_states(result, features), "padding_mask": features["padding_mask"]},
        max_length)


PIPELINES = {"feature-extraction": feature_extraction}
