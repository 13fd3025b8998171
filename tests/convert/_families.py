"""Original TF1 releases of ALBERT and ELECTRA, written under google-research's variable
names, and the tiny Hugging Face checkpoints of tests/fixtures/hf_tiny."""

import json
import shutil
from pathlib import Path

import numpy as np
import tensorflow as tf

import kbert.convert
from kbert.models import ElectraPretrainer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hf_tiny"
POSITIONS = np.array([[1, 3], [2, 5], [0, 7]], "int32")
ATOL = 1e-5  # float32 noise; the largest difference seen is under 3e-7


def _reference(name):
    with np.load(FIXTURES / name / "reference.npz") as data:
        return dict(data)


def _features(reference, model):
    x = {k: reference[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    x["mask_positions"] = POSITIONS
    return {k: v for k, v in x.items() if k in model.input}


def close(got, expected, mask=None, what=""):
    got, expected = np.asarray(got), np.asarray(expected)
    if mask is not None:
        got, expected = got[mask], expected[mask]
    np.testing.assert_allclose(got, expected, atol=ATOL, rtol=0, err_msg=what)


def _at_positions(logits):
    return np.take_along_axis(logits, POSITIONS[..., None], axis=1)


def check_against_transformers(model, name):
    """`model`'s outputs equal the reference that `transformers` computed for fixture `name`."""
    reference = _reference(name)
    mask = reference["padding_mask"].astype(bool)
    backbone = getattr(model, "backbone", model)
    sequence = backbone(_features(reference, backbone))["sequence_output"]
    close(sequence, reference["sequence_output"], mask, "sequence_output")
    if backbone is model:
        return
    outputs = model(_features(reference, model))
    if isinstance(model, ElectraPretrainer):  # its generator's MLM, its discriminator's RTD
        generator = _reference("electra/generator")
        close(outputs["mlm_logits"], _at_positions(generator["mlm_logits"]), what="mlm")
        close(model.rtd_head(sequence), reference["rtd_logits"], mask, "rtd_logits")
        return
    close(outputs["mlm_logits"], _at_positions(reference["mlm_logits"]), what="mlm_logits")
    if "nsp_logits" in reference:
        close(outputs["nsp_logits"], reference["nsp_logits"], what="sop_logits")


def tf1_name(hf_name, renames):
    """A Hugging Face name (model prefix dropped) in TF1 form: dots to scopes, `layer.3` to
    `layer_3`, weight/bias to kernel/bias or gamma/beta; `renames` first."""
    for old, new in renames:
        hf_name = hf_name.replace(old, new)
    parts = hf_name.replace("layer.", "layer_").split(".")
    last = parts.pop()
    if parts[-1].endswith("_embeddings"):
        return "/".join(parts), False
    if parts[-1].startswith(("LayerNorm", "full_layer_layer_norm")):
        return "/".join(parts + [{"weight": "gamma", "bias": "beta"}[last]]), False
    if last == "weight":
        return "/".join(parts + ["kernel"]), True
    return "/".join(parts + [last]), False


def save_tf1(variables, prefix):
    """SaveV2 keeps the names it is given; a pretraining checkpoint's optimizer slot and step
    are added, which a reader must skip."""
    first = sorted(variables)[0]
    variables = {**variables, "global_step": np.array(100, "int64"),
                 f"{first}/adam_m": np.zeros_like(variables[first])}
    names = sorted(variables)
    tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=names,
                      shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(variables[n]) for n in names])


ALBERT_RENAMES = [  # google-research/albert's scopes (modeling.py: attention_ffn_block)
    ("encoder.albert_layer_groups.", "encoder.transformer.group_"),
    (".albert_layers.0.", ".inner_group_0."),
    ("attention.query", "attention_1.self.query"),
    ("attention.key", "attention_1.self.key"),
    ("attention.value", "attention_1.self.value"),
    ("attention.dense", "attention_1.output.dense"),
    ("attention.LayerNorm", "LayerNorm"),
    ("ffn_output", "ffn_1.intermediate.output.dense"),
    ("ffn.", "ffn_1.intermediate.dense."),
    ("full_layer_layer_norm", "LayerNorm_1"),
    ("pooler.", "pooler.dense."),
    ("predictions.", "predictions.transform."),
]


def write_albert_tf1_release(release):
    """The ALBERT fixture as google-research/albert publishes it: model.ckpt-best.*,
    albert_config.json, 30k-clean.model."""
    hf = kbert.convert.read(FIXTURES / "albert")
    variables = {}
    for name, value in hf.weights.items():
        if name == "predictions.bias":
            variables["cls/predictions/output_bias"] = value
        elif name.startswith("sop_classifier."):  # output_weights is [2, H], as Hugging Face
            kind = {"weight": "weights", "bias": "bias"}[name.split(".")[-1]]
            variables[f"cls/seq_relationship/output_{kind}"] = value
        else:
            tf1, transpose = tf1_name(name, ALBERT_RENAMES)
            scope = "cls/" if name.startswith("predictions.") else "bert/"
            variables[scope + tf1] = value.T if transpose else value
    assert "bert/encoder/transformer/group_1/inner_group_0/ffn_1/intermediate/output/dense/" \
           "kernel" in variables
    release = Path(release)
    release.mkdir(parents=True)
    save_tf1(variables, release / "model.ckpt-best")
    hf_config = json.loads((FIXTURES / "albert" / "config.json").read_text())
    hf_config["hidden_act"] = "gelu"  # google-research's name of the tanh form (gelu_new)
    (release / "albert_config.json").write_text(json.dumps(hf_config))
    shutil.copy(FIXTURES / "albert" / "spiece.model", release / "30k-clean.model")
    return release
