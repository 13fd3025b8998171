"""Every private Keras, keras-hub, TensorFlow and tensorflow-text API kbert relies on, each
behind a version guard.

A private attribute can change in any release. kbert uses one only where no public API does
the job (the README's "Keras limits" lists each with its upstream issue), and calls `guard`
first: on a version kbert was not tested with, it fails with a message that names the API,
the version and what to do, instead of misbehaving quietly. KBERT_ALLOW_UNTESTED_KERAS=1
skips the version check (the attribute must still exist).
"""

import importlib
import os
import typing

# The versions the test suite ran with (constraints.txt pins them): a prefix of `__version__`.
TESTED = {"keras": ("3.15.",), "keras_hub": ("0.32.",), "tensorflow": ("2.21.",),
          "tensorflow_text": ("2.21.",)}


class PrivateApi(typing.NamedTuple):
    package: str  # "keras", "keras_hub", "tensorflow" or "tensorflow_text"
    what: str  # what kbert touches
    why: str  # why no public API does
    upstream: str  # the upstream issue


PRIVATE_APIS = {
    "maybe_symbolic_build": PrivateApi(
        "keras", "Model._maybe_symbolic_build (replaced by a no-op)",
        "fit() under MultiWorkerMirroredStrategy reduces a dict of inputs to build the model "
        "and fails; kbert builds the model and optimizer first and skips that step",
        "keras-team/keras#20329, tensorflow/tensorflow#72388"),
    "clip_gradients": PrivateApi(
        "keras", "Optimizer._clip_gradients (overridden by kbert's AdamW and Lamb)",
        "Keras clips each replica's gradient before the replicas are summed; kbert clips "
        "the summed gradient, as one device would",
        "tensorflow/tensorflow#33929"),
    "optimizer_variable_index": PrivateApi(
        "keras", "Optimizer._get_variable_index (read by kbert's AdamW and Lamb)",
        "layer-wise learning-rate decay needs to know, inside update_step, which variable it "
        "updates; Keras passes the backend's variable without its path",
        "none filed"),
    "keras_hub_encoder_sublayers": PrivateApi(
        "keras_hub", "TransformerEncoder._self_attention_layer, ._feedforward_* and "
        "CachedMultiHeadAttention._query_dense/_key_dense/_value_dense/_output_dense (and "
        "the same names in DeBERTa-v3's DisentangledAttentionEncoder and "
        "DisentangledSelfAttention)",
        "keras-hub exposes a transformer block's weights only through its private sublayers; "
        "kbert reads them to convert keras-hub presets",
        "none filed"),
    "layer_tracker": PrivateApi(
        "keras", "Layer._tracker (unlock / lock, around add_weight on a built layer)",
        "a built layer refuses new weights unless its tracker is unlocked; kbert's LoRA adds "
        "its A and B matrices to a built EinsumDense as Keras' own enable_lora does",
        "none filed"),
    "flatten_layers": PrivateApi(
        "keras", "Layer._flatten_layers (every nested sublayer)",
        "Keras has no public way to walk a layer's nested sublayers; kbert's LoRA walks the "
        "encoder blocks for their dense layers, as keras-hub's Backbone.enable_lora does",
        "none filed"),
    "export_archive_internals": PrivateApi(
        "keras", "ExportArchive._endpoint_names, ._filter_and_track_resources, "
        "._get_concrete_fn and ._tf_trackable (the steps of ExportArchive.write_out)",
        "write_out traces every endpoint twice (its variable listing outside the save's "
        "options, then tf.saved_model.save inside them); kbert runs the same steps with the "
        "first trace inside the save's options, so that the save reuses it",
        "none filed"),
    "tf_save_context": PrivateApi(
        "tensorflow", "tensorflow.python.saved_model.save_context.save_context",
        "TensorFlow's function cache keys a trace by the SavedModel save's variable policy; "
        "a trace made outside a save context is traced again by the save",
        "none filed"),
    "fast_bert_parts": PrivateApi(
        "tensorflow_text", "FastBertTokenizer._fast_bert_normalizer and "
        "._fast_wordpiece_tokenizer (read by the TFLite span exports)",
        "FastBertTokenizer.tokenize_with_offsets gathers with ragged indices, which adds a "
        "RaggedRange that TFLite has no kernel for; kbert calls its two steps "
        "(normalize_with_offsets, tokenize_with_offsets) and maps the offsets densely",
        "none filed"),
    "sentencepiece_resource": PrivateApi(
        "tensorflow_text", "tensorflow_text.python.ops.sentencepiece_tokenizer."
        "gen_sentencepiece_tokenizer.sentencepiece_op and SentencepieceTokenizer."
        "_model_resource (replaced by a named resource)",
        "the SentencePiece model's resource has no name, so TensorFlow deletes it when it "
        "clears its kernel caches (tf.random.set_seed does); kbert gives it a shared name",
        "none filed"),
}


class UntestedVersionError(RuntimeError):
    """A private API on a Keras / keras-hub / TensorFlow / tensorflow-text version kbert was
    not tested with."""


def guard(name):
    """Raises `UntestedVersionError` unless the package behind `name` is a tested version."""
    package, what, why, upstream = PRIVATE_APIS[name]
    version = importlib.import_module(package).__version__
    if version.startswith(TESTED[package]) or os.environ.get("KBERT_ALLOW_UNTESTED_KERAS"):
        return
    raise UntestedVersionError(
        f"kbert uses the private {package} API {what} because {why} ({upstream}). It was "
        f"tested with {package} {' / '.join(v + 'x' for v in TESTED[package])}, and this is "
        f"{package} {version}. Install the tested version (constraints.txt pins it), or set "
        "KBERT_ALLOW_UNTESTED_KERAS=1 to try anyway."
    )


def skip_symbolic_build(model):
    """fit() will not build `model` symbolically (it is built already)."""
    guard("maybe_symbolic_build")
    if not hasattr(model, "_maybe_symbolic_build"):
        raise UntestedVersionError("keras.Model has no _maybe_symbolic_build any more: the "
                                   "multi-worker work-around needs updating.")
    model._maybe_symbolic_build = lambda *args, **kwargs: None


def layer_tracker(layer):
    """The tracker of a Keras layer (`unlock()` lets a built layer add weights)."""
    guard("layer_tracker")
    return layer._tracker


def flatten_layers(layer):
    """Every sublayer nested in `layer`, not `layer` itself."""
    guard("flatten_layers")
    return list(layer._flatten_layers(include_self=False))


def fast_bert_parts(tokenizer):
    """(normalizer, wordpiece tokenizer): the two steps of a `tensorflow_text.FastBertTokenizer`
    (a `FastBertNormalizer` and a `FastWordpieceTokenizer`)."""
    guard("fast_bert_parts")
    return tokenizer._fast_bert_normalizer, tokenizer._fast_wordpiece_tokenizer


def sentencepiece_op(model, shared_name):
    """tensorflow-text's op that makes a SentencePiece model's resource, under `shared_name`."""
    guard("sentencepiece_resource")
    from tensorflow_text.python.ops.sentencepiece_tokenizer import gen_sentencepiece_tokenizer

    return gen_sentencepiece_tokenizer.sentencepiece_op(model=model, shared_name=shared_name)


def replace_sentencepiece_resource(tokenizer, resource):
    """A `tensorflow_text.SentencepieceTokenizer` reads its model from `resource` from now on."""
    guard("sentencepiece_resource")
    if not hasattr(tokenizer, "_model_resource"):
        raise UntestedVersionError("tensorflow_text.SentencepieceTokenizer has no "
                                   "_model_resource any more: kbert's named resource needs "
                                   "updating.")
    tokenizer._model_resource = resource
