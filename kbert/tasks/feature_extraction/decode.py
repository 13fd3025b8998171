"""Feature extraction's outputs as transformers' FeatureExtractionPipeline gives them, and as
`kbert.pipeline("feature-extraction")` returns them: the backbone's last hidden states of
every token of a text, [CLS] and [SEP] included, padding left out (`hidden_states`). The
SavedModel (`pipeline_serving`) and TFLite (`tflite`) give the same states, zero past
`num_tokens`.
"""

import numpy as np


def hidden_states(rows, lengths, return_tensors, single):
    """The backbone's `sequence_output` per text (`rows`, [positions, hidden] each) and each
    text's token count (`lengths`) -> the pipeline's answer: per text [1, tokens, hidden] as
    nested lists, or with `return_tensors` float32 arrays; `single` (one text given as a
    string): that text's alone."""
    out = []
    for row, length in zip(rows, lengths):
        states = np.asarray(row[:length], np.float32)[None]
        out.append(states if return_tensors else states.tolist())
    return out[0] if single else out
