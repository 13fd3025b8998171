"""A model built on a kbert backbone (a task model, a pretrainer) with its backbone's
internals added to its outputs, as transformers' `output_hidden_states` and
`output_attentions` add `hidden_states` and `attentions` to a `*For<Task>` model's outputs
(`SequenceClassifierOutput(logits, hidden_states, attentions)`)."""

import keras

from kbert.models.backbone import Backbone

# What the backbone's `with_internals` adds, in transformers' order (after the task's outputs).
INTERNALS = ("hidden_states", "attentions")


def model_with_internals(model, hidden_states=True, attentions=True, output_name="logits"):
    """A `keras.Model` that runs `model`'s own graph, layer for layer (the same layer objects,
    so the same weights: nothing is copied), with its backbone's call replaced by the
    backbone's `with_internals` model.

    Its outputs (a dict): `model`'s outputs (a dict as they are; a single tensor under
    `output_name`), then `hidden_states` (num_layers + 1 tensors [B, S, H]: the embeddings'
    output, then each layer's) and/or `attentions` (num_layers tensors [B, N, S, S]: each
    layer's probabilities), as `Backbone.with_internals` gives them. `model` itself is left
    as it is.

    Args:
        model: a functional Keras model whose attribute `backbone`, a kbert `Backbone`, is
            called once in its graph (every kbert task model and pretrainer).
        hidden_states, attentions: what to add; at least one.
        output_name: the key of a single-tensor output.
    """
    what = type(model).__name__
    backbone = getattr(model, "backbone", None)
    allowed = ("hidden states and attentions come from a kbert backbone, and from a "
               "functional task model (kbert.tasks) or pretrainer (kbert.models) built on one")
    if not isinstance(backbone, Backbone):
        raise ValueError(f"A {what} has no kbert backbone (its `backbone` is a "
                         f"{type(backbone).__name__}): {allowed}.")
    if getattr(model, "inputs", None) is None:
        raise ValueError(f"A {what} is not a functional Keras model (no graph to run again "
                         f"with its backbone's internals): {allowed}.")
    if not (hidden_states or attentions):
        raise ValueError("with_internals needs hidden_states=True or attentions=True.")
    inspected = backbone.with_internals(hidden_states=hidden_states, attentions=attentions)
    found = []

    def call(layer, *args, **kwargs):
        if layer is not backbone:
            return layer(*args, **kwargs)
        outputs = inspected(*args, **kwargs)
        found.append({name: outputs[name] for name in INTERNALS if name in outputs})
        return {name: outputs[name] for name in backbone.output}

    rebuilt = keras.models.clone_model(model, clone_function=lambda layer: layer,
                                       call_function=call)
    if len(found) != 1:
        raise ValueError(f"A {what} calls its backbone {len(found)} times in its graph: "
                         "with_internals needs one call, whose internals it returns.")
    outputs = rebuilt.output
    if not isinstance(outputs, dict):
        outputs = {output_name: outputs}
    clash = sorted(set(outputs) & set(INTERNALS))
    if clash:
        raise ValueError(f"A {what} has outputs named {clash} already.")
    return keras.Model(rebuilt.input, {**outputs, **found[0]}, name=f"{model.name}_internals")
