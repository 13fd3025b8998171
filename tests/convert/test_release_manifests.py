"""kbert's readers against the tensors the real releases hold.

tests/fixtures/release_manifests/<preset>.tsv lists each tensor (name, shape, dtype) of a
preset's released checkpoint, taken from the code that wrote the release (google-research's
TF1 scopes, the Hugging Face classes; tests/fixtures/make_release_manifests.py cites them),
never from kbert. For every preset: the TF1 or Hugging Face name translation maps every
tensor (none ignored), the header checks accept the shapes, and the preset's model takes
every tensor it needs and no tensor is left over but the ones named here with their reason.
The models are built with deferred variables (nothing allocated); the smallest releases are
also written as files of zeros and read and built by the public readers.
"""

import contextlib
import json
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras.src.backend.common import global_state
from safetensors.numpy import save_file

from kbert import models, presets
from kbert.convert import _checks, _mapping, families, hugging_face, tf1
from kbert.tokenizers import SPECIAL_TOKENS

MANIFESTS = Path(__file__).resolve().parents[1] / "fixtures" / "release_manifests"
PRESETS = sorted(p.stem for p in MANIFESTS.glob("*.tsv"))

# Tensors of a release that no kbert model uses, each with its reason; any other left over
# fails.
NOT_USED = {
    # TinyBERT's distillation projection onto the teacher's width (kbert.convert.bert).
    "tiny_bert_4l_312": {"fit_dense.weight", "fit_dense.bias"},
    "tiny_bert_6l_768": {"fit_dense.weight", "fit_dense.bias"},
    # DeBERTa-v3's replaced-token-detection head: kbert has no discriminator head for it.
    **{f"deberta_v3_{size}": {f"mask_predictions.{layer}.{kind}"
                              for layer in ("dense", "LayerNorm", "classifier")
                              for kind in ("weight", "bias")}
       for size in ("xsmall", "small", "base", "large")},
    # FinBERT is a fine-tuned sentiment classifier: its head is read with task=
    # "text_classifier" (kbert.convert.task_heads), not by the preset's model.
    "fin_bert": {"classifier.weight", "classifier.bias"},
    # CodeBERT is a RobertaModel, whose pooler kbert's RoBERTa (no pooler) does not have.
    "code_bert": {"pooler.dense.weight", "pooler.dense.bias"},
}
# Releases without a pretraining head: the preset's model is their encoder.
ENCODER_ONLY = {"fin_bert", "code_bert"}
# Weights a release lacks and the model keeps its initial values for: ELECTRA has no pooler.
KEPT = {name: {"pooler.dense.weight", "pooler.dense.bias"}
        for name in ("electra_small", "electra_base", "electra_large")}


@contextlib.contextmanager
def deferred_variables():
    """Variables made inside are never allocated: Keras defers variables made in a
    `StatelessScope` that does not initialise them on exit. Keras keeps them in a list of
    variables to initialise, which the next `StatelessScope` to close (any symbolic call in a
    later test) would allocate: they are taken off it again (a private attribute; no public
    API drops a deferred variable)."""
    before = list(global_state.get_global_attribute("uninitialized_variables", []) or [])
    try:
        with keras.StatelessScope(initialize_variables=False):
            yield
    finally:
        global_state.set_global_attribute("uninitialized_variables", before)


def read_manifest(preset):
    text = (MANIFESTS / f"{preset}.tsv").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert text.startswith(f"# {preset}: ") and "\n# source: " in text
    result = {}
    for line in lines:
        name, shape, dtype = line.split("\t")
        assert name not in result, name
        result[name] = (tuple(int(d) for d in shape.split(",")), dtype)
    return result


def _zeros(shape):
    """An array of zeros that allocates nothing (every stride 0)."""
    return np.broadcast_to(np.float32(0), shape)


def common_weights(preset):
    """(family record, the manifest's tensors in kbert's common names) through the reader's
    own translation; fails naming every tensor it does not map."""
    info, tensors = presets.get(preset), read_manifest(preset)
    if info["weights"]["format"] == "tf1":
        family = tf1.family_of(tensors)
        assert family == info["model"]
        translated = {name: tf1.tf1_name_to_hf(name, family) for name in tensors}
        unmapped = sorted(n for n, t in translated.items() if t is None)
        assert not unmapped, f"{preset}: kbert's TF1 reader ignores {unmapped}"
        weights = {hf: _zeros(tensors[name][0][::-1] if transpose else tensors[name][0])
                   for name, (hf, transpose) in translated.items()}
        assert len(weights) == len(tensors), "two TF1 names map onto one"
    else:
        family = info["model"]
        weights = hugging_face._normalise({n: _zeros(s) for n, (s, _) in tensors.items()},
                                          families.get(family))
    return families.get(family), weights


class _Spec:
    """A model variable's shape and dtype, for `_mapping.assign` to check against."""

    def __init__(self, variable):
        self.shape, self.dtype, self.path = tuple(variable.shape), variable.dtype, variable.path
        self.assigned = False

    def assign(self, value):
        assert tuple(value.shape) == self.shape, self.path
        self.assigned = True


@pytest.mark.parametrize("preset", PRESETS)
def test_every_released_tensor_maps_onto_the_preset(preset):
    record, weights = common_weights(preset)
    config = presets.config(preset)
    tensors = _checks.tensors_of(weights, f"{preset}.tsv")
    _checks.check_shapes(record, config, tensors, f"presets/{preset}.json")
    if record.config_from_weights is not None:  # ELECTRA: the architecture from the weights
        found = record.config_from_weights(weights, preset)
        assert found == config.replace(**{f: getattr(found, f) for f in
                                          ("dropout", "attention_dropout")})
    head = record.heads_in(weights)
    assert head == "pretrainer" or (head == "mlm" and preset.startswith((
        "roberta", "distil", "deberta", "modern_bert", "ettin", "mm_bert"))) or (
        head is None and preset in ENCODER_ONLY)
    arguments = ({} if record.pretrainer_arguments is None
                 else record.pretrainer_arguments(config, weights))
    with deferred_variables():
        model = models.build(record.name, config, head=head, **arguments)
        entries = [_mapping.Entry(e.names, _Spec(e.variable), e.kind, e.optional)
                   for e in record.entries(model)]
        assert all(e.variable._value is None for e in record.entries(model))  # not allocated
    unused, kept = _mapping.assign(entries, weights, source=preset)
    assert set(unused) == NOT_USED.get(preset, set())
    assert set(kept) == KEPT.get(preset, set())
    missed = [e.variable.path for e in entries if not e.variable.assigned
              and not set(e.names) <= KEPT.get(preset, set())]
    assert not missed


def _vocab_txt(folder, size):
    tokens = [*SPECIAL_TOKENS.values()]
    tokens += [f"w{i}" for i in range(size - len(tokens))]
    (folder / "vocab.txt").write_text("".join(f"{t}\n" for t in tokens), encoding="utf-8")


def _write_tf1(preset, folder):
    """The release as files: its variables (zeros) under their TF1 names, bert_config.json
    where the release has one, vocab.txt."""
    tensors = read_manifest(preset)
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=str(folder / "model.ckpt"), tensor_names=names,
                      shape_and_slices=[""] * len(names),
                      tensors=[tf.zeros(tensors[n][0], tensors[n][1]) for n in names])
    info = presets.get(preset)
    if info["model"] == "bert":
        config = presets.config(preset)
        (folder / "bert_config.json").write_text(json.dumps({
            "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1, "hidden_size": config.hidden_size,
            "initializer_range": 0.02, "intermediate_size": config.intermediate_size,
            "max_position_embeddings": 512, "num_attention_heads": config.num_heads,
            "num_hidden_layers": config.num_layers, "type_vocab_size": 2,
            "vocab_size": config.vocabulary_size}))
    _vocab_txt(folder, info["config"]["vocabulary_size"])
    return tf1.read(folder)


def _write_hf(preset, folder):
    """The release as files: model.safetensors of zeros under its names, a config.json of
    the preset's architecture, vocab.txt."""
    tensors = read_manifest(preset)
    save_file({n: np.zeros(s, d) for n, (s, d) in tensors.items()},
              str(folder / "model.safetensors"))
    family = families.get(presets.get(preset)["model"])
    config = presets.config(preset)
    (folder / "config.json").write_text(json.dumps(family.config_to_hf(config)))
    _vocab_txt(folder, config.vocabulary_size)
    return hugging_face.read(folder)


@pytest.mark.slow
@pytest.mark.parametrize("preset,write", [("bert_tiny", _write_tf1),
                                          ("electra_small", _write_tf1),
                                          ("tiny_bert_4l_312", _write_hf)])
def test_smallest_releases_read_and_build_from_zeros(preset, write, tmp_path):
    checkpoint = write(preset, tmp_path)
    expected = presets.config(preset)
    fields = ("vocabulary_size", "num_layers", "hidden_size", "num_heads",
              "intermediate_size", "max_sequence_length", "type_vocab_size")
    assert {f: getattr(checkpoint.config, f) for f in fields} == \
        {f: getattr(expected, f) for f in fields}
    model = checkpoint.build()
    assert checkpoint.head == "pretrainer"
    # Every weight read from the file is its zeros; ELECTRA's pooler (no release has one)
    # keeps its initial values.
    read = [v for v in model.weights if "float" in str(v.dtype) and not (
        preset in KEPT and "pooler" in v.path)]
    assert len(read) > 10
    nonzero = [v.path for v in read if np.any(keras.ops.convert_to_numpy(v))]
    assert not nonzero
