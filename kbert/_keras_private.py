"""Every private Keras, keras-hub and TensorFlow API kbert relies on, each behind a version guard.

A private attribute can change in any release. kbert uses one only where no public API does
the job (the README's "Keras limits" lists each with its upstream issue), and calls `guard`
first: on a version kbert was not tested with, it fails with a message that names the API,
the version and what to do, instead of misbehaving quietly. KBERT_ALLOW_UNTESTED_KERAS=1
skips the version check (the attribute must still exist).
"""

import importlib
import os
import typing

# The versions the test suite ran with (setup.py pins them): a prefix of `__version__`.
TESTED = {"keras": ("3.15.",), "keras_hub": ("0.32.",), "tensorflow": ("2.21.",)}


class PrivateApi(typing.NamedTuple):
    package: str  # "keras", "keras_hub" or "tensorflow"
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
}


class UntestedVersionError(RuntimeError):
    """A private API on a Keras / keras-hub version kbert was not tested with."""


def guard(name):
    """Raises `UntestedVersionError` unless the package behind `name` is a tested version."""
    package, what, why, upstream = PRIVATE_APIS[name]
    version = importlib.import_module(package).__version__
    if version.startswith(TESTED[package]) or os.environ.get("KBERT_ALLOW_UNTESTED_KERAS"):
        return
    raise UntestedVersionError(
        f"kbert uses the private {package} API {what} because {why} ({upstream}). It was "
        f"tested with {package} {' / '.join(v + 'x' for v in TESTED[package])}, and this is "
        f"{package} {version}. Install the tested version (setup.py pins it), or set "
        "KBERT_ALLOW_UNTESTED_KERAS=1 to try anyway."
    )


def skip_symbolic_build(model):
    """fit() will not build `model` symbolically (it is built already)."""
    guard("maybe_symbolic_build")
    if not hasattr(model, "_maybe_symbolic_build"):
        raise UntestedVersionError("keras.Model has no _maybe_symbolic_build any more: the "
                                   "multi-worker work-around needs updating.")
    model._maybe_symbolic_build = lambda *args, **kwargs: None
