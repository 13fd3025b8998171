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


# The per-layer outputs a feature-extraction pipeline gives on request, as transformers'
# model options of the same names (`output_hidden_states`, `output_attentions`) name them.
INTERNALS = ("hidden_states", "attentions")


def with_internals(rows, lengths, return_tensors, single):
    """The answer of a feature-extraction pipeline asked for `INTERNALS`: per text a dict,
    as transformers' model output names them, of `last_hidden_state` (the pipeline's usual
    answer, [1, tokens, hidden]) and those of `hidden_states` ([layers + 1] of [1, tokens,
    hidden]: the embeddings' output, then each layer's) and `attentions` ([layers] of [1,
    heads, tokens, tokens]) the `rows` hold (batch first: [layers + 1, positions, hidden],
    [layers, heads, positions, positions]), cut to the text's tokens; nested lists, or with
    `return_tensors` float32 arrays (tuples of them per layer, as transformers' tuples)."""
    out = []
    for row, length in zip(rows, lengths):
        answer = {"last_hidden_state": hidden_states([row["sequence_output"]], [length],
                                                     return_tensors, True)}
        if "hidden_states" in row:
            answer["hidden_states"] = [np.asarray(h[None, :length], np.float32)
                                       for h in row["hidden_states"]]
        if "attentions" in row:
            answer["attentions"] = [np.asarray(a[None, :, :length, :length], np.float32)
                                    for a in row["attentions"]]
        for name in INTERNALS:
            if name in answer:
                answer[name] = (tuple(answer[name]) if return_tensors
                                else [x.tolist() for x in answer[name]])
        out.append(answer)
    return out[0] if single else out
