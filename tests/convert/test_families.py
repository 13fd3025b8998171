"""ALBERT, DistilBERT and ELECTRA checkpoints: Hugging Face directories made by `transformers`
(tests/fixtures/make_hf_tiny.py, with its outputs), original TF1 releases, and round trips."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import kbert.convert
from kbert.models import ElectraBackbone, ElectraPretrainer

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


def _close(got, expected, mask=None, what=""):
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
    _close(sequence, reference["sequence_output"], mask, "sequence_output")
    if backbone is model:
        return
    outputs = model(_features(reference, model))
    if isinstance(model, ElectraPretrainer):  # its generator's MLM, its discriminator's RTD
        generator = _reference("electra/generator")
        _close(outputs["mlm_logits"], _at_positions(generator["mlm_logits"]), what="mlm")
        _close(model.rtd_head(sequence), reference["rtd_logits"], mask, "rtd_logits")
        return
    _close(outputs["mlm_logits"], _at_positions(reference["mlm_logits"]), what="mlm_logits")
    if "nsp_logits" in reference:
        _close(outputs["nsp_logits"], reference["nsp_logits"], what="sop_logits")


@pytest.mark.parametrize("name,family,head,model_class", [
    ("distil_bert", "distil_bert", "pretrainer", "DistilBertPretrainer"),
    ("albert", "albert", "pretrainer", "AlbertPretrainer"),
    ("electra/generator", "electra", "mlm", "ElectraMaskedLM"),
    ("electra", "electra", "pretrainer", "ElectraPretrainer"),  # + its generator/ folder
])
def test_hugging_face_models_import_with_the_outputs_of_transformers(name, family, head,
                                                                     model_class):
    checkpoint = kbert.convert.read(FIXTURES / name)
    assert (checkpoint.family, checkpoint.head) == (family, head)
    model = checkpoint.build()
    assert type(model).__name__ == model_class
    check_against_transformers(model, name)
    check_against_transformers(checkpoint.build(head=None), name)


def test_configs_read_each_familys_names():
    distil = kbert.convert.read(FIXTURES / "distil_bert").config
    assert (distil.num_layers, distil.hidden_size, distil.num_heads, distil.intermediate_size,
            distil.type_vocab_size, distil.activation) == (2, 16, 2, 32, 0, "gelu")
    albert = kbert.convert.read(FIXTURES / "albert").config
    assert (albert.num_layers, albert.num_groups, albert.embedding_size,
            albert.activation) == (4, 2, 8, "gelu_approximate")
    electra = kbert.convert.read(FIXTURES / "electra")
    assert electra.config.embedding_size == 12
    assert kbert.convert.checkpoint.MAPPINGS["electra"].pretrainer_arguments(
        electra.config, electra.weights) == {"generator_hidden_fraction": 0.5,
                                             "generator_layers_fraction": 1.0}


def test_an_electra_discriminator_alone_imports_as_the_backbone(tmp_path):
    shutil.copytree(FIXTURES / "electra", tmp_path / "d", ignore=shutil.ignore_patterns("gen*"))
    checkpoint = kbert.convert.read(tmp_path / "d")
    assert checkpoint.head is None
    backbone = checkpoint.build()
    assert isinstance(backbone, ElectraBackbone)
    check_against_transformers(backbone, "electra")
    with pytest.raises(ValueError, match="has no electra pretraining heads"):
        checkpoint.build(head="pretrainer")


@pytest.mark.parametrize("name", ["distil_bert", "albert", "electra", "electra/generator"])
def test_hugging_face_export_then_import_round_trips_exactly(tmp_path, name):
    checkpoint = kbert.convert.read(FIXTURES / name)
    out = kbert.convert.hugging_face.write(checkpoint, tmp_path / "hf")
    again = kbert.convert.read(out)
    assert again.config == checkpoint.config and again.family == checkpoint.family
    assert again.vocabulary == checkpoint.vocabulary
    assert again.sentencepiece_model == checkpoint.sentencepiece_model
    assert sorted(again.weights) == sorted(checkpoint.weights)
    for key, value in checkpoint.weights.items():
        assert np.array_equal(again.weights[key], value), key
    written = json.loads((out / "config.json").read_text())
    original = json.loads((FIXTURES / name / "config.json").read_text())
    assert written["architectures"] == original["architectures"]
    if name == "electra":
        assert (out / "generator" / "config.json").is_file()
    check_against_transformers(again.build(), name)


def test_a_kbert_electra_pretrainer_exports_and_imports(tmp_path):
    backbone = ElectraBackbone(vocabulary_size=40, num_layers=2, hidden_size=16, num_heads=1,
                               intermediate_size=32, embedding_size=12, max_sequence_length=24)
    original = ElectraPretrainer(backbone, generator_hidden_fraction=0.5)
    _randomise(original)
    kbert.convert.save_hugging_face(original, tmp_path / "hf")
    imported = kbert.convert.load(tmp_path / "hf")
    assert isinstance(imported, ElectraPretrainer)
    assert imported.generator.hidden_size == 8
    _same_deterministic_outputs(original, imported)


def _randomise(model, seed=0):
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        if variable.dtype == "float32":
            variable.assign(rng.normal(0.0, 0.2, variable.shape).astype("float32"))


def _same_deterministic_outputs(a, b, with_pooler=False):
    """The outputs that do not depend on the sampler: backbone, generator MLM, RTD head."""
    rng = np.random.default_rng(1)
    x = {"token_ids": rng.integers(0, 40, (3, 12)).astype("int32"),
         "segment_ids": np.zeros((3, 12), "int32"), "padding_mask": np.ones((3, 12), "int32"),
         "mask_positions": POSITIONS}
    features = {k: v for k, v in x.items() if k != "mask_positions"}
    ya, yb = a.backbone(features), b.backbone(features)
    _close(yb["sequence_output"], ya["sequence_output"], what="sequence_output")
    if with_pooler:
        _close(yb["pooled_output"], ya["pooled_output"], what="pooled_output")
    _close(b(x)["mlm_logits"], a(x)["mlm_logits"], what="mlm_logits")
    _close(b.rtd_head(ya["sequence_output"]), a.rtd_head(ya["sequence_output"]), what="rtd")


# === Original TF1 releases, written under the variable names of google-research's code ===


def _tf1_name(hf_name, renames):
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


def _save_tf1(variables, prefix):
    variables = {**variables, "global_step": np.array(100, "int64"),
                 "electra/encoder/layer_0/output/dense/bias/adam_m": np.zeros(2, "float32")}
    names = sorted(variables)
    tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=names,
                      shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(variables[n]) for n in names])


_ALBERT_RENAMES = [  # google-research/albert's scopes (modeling.py: attention_ffn_block)
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


def test_albert_tf1_release_imports_with_the_outputs_of_transformers(tmp_path):
    hf = kbert.convert.read(FIXTURES / "albert")
    variables = {}
    for name, value in hf.weights.items():
        if name == "predictions.bias":
            variables["cls/predictions/output_bias"] = value
        elif name.startswith("sop_classifier."):  # output_weights is [2, H], as Hugging Face
            kind = {"weight": "weights", "bias": "bias"}[name.split(".")[-1]]
            variables[f"cls/seq_relationship/output_{kind}"] = value
        else:
            tf1_name, transpose = _tf1_name(name, _ALBERT_RENAMES)
            scope = "cls/" if name.startswith("predictions.") else "bert/"
            variables[scope + tf1_name] = value.T if transpose else value
    assert "bert/encoder/transformer/group_1/inner_group_0/ffn_1/intermediate/output/dense/" \
           "kernel" in variables
    release = tmp_path / "albert_base"
    release.mkdir()
    _save_tf1(variables, release / "model.ckpt-best")
    hf_config = json.loads((FIXTURES / "albert" / "config.json").read_text())
    hf_config["hidden_act"] = "gelu"  # google-research's name of the tanh form (gelu_new)
    (release / "albert_config.json").write_text(json.dumps(hf_config))
    shutil.copy(FIXTURES / "albert" / "spiece.model", release / "30k-clean.model")
    assert kbert.convert.detect_format(release) == "tf1"
    checkpoint = kbert.convert.read(release)
    assert checkpoint.family == "albert" and checkpoint.head == "pretrainer"
    assert checkpoint.config == hf.config
    assert checkpoint.sentencepiece_model == hf.sentencepiece_model
    check_against_transformers(checkpoint.build(), "albert")


def _electra_tf1_variables(weights):
    variables = {}
    for name, value in weights.items():
        if name.startswith("pooler."):
            continue  # the release has no pooler
        if name == "generator_lm_head.bias":
            variables["generator_predictions/output_bias"] = value
            continue
        scope = "generator/" if name.startswith("generator.") else (
            "" if name.startswith(("discriminator_", "generator_")) else "electra/")
        tf1_name, transpose = _tf1_name(name.removeprefix("generator."),
                                        [("dense_prediction", "dense_1")])
        variables[scope + tf1_name] = value.T if transpose else value
    return variables


def test_electra_tf1_release_imports_as_a_whole_pretrainer(tmp_path):
    # The release has no config: one head per 64 units (here 1) and 4 x width feed-forward.
    backbone = ElectraBackbone(vocabulary_size=40, num_layers=2, hidden_size=16, num_heads=1,
                               intermediate_size=32, embedding_size=12, max_sequence_length=24,
                               activation="gelu_approximate")
    original = ElectraPretrainer(backbone, generator_hidden_fraction=0.5)
    _randomise(original, seed=4)
    variables = _electra_tf1_variables(kbert.convert.Checkpoint.from_model(original).weights)
    assert "generator/encoder/layer_1/attention/self/query/kernel" in variables
    assert "discriminator_predictions/dense_1/kernel" in variables
    release = tmp_path / "electra_small"
    release.mkdir()
    _save_tf1(variables, release / "electra_small")
    (release / "checkpoint").write_text('model_checkpoint_path: "electra_small"\n')
    (release / "vocab.txt").write_text("".join(f"[unused{i}]\n" for i in range(35))
                                       + "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    checkpoint = kbert.convert.read(release)
    assert checkpoint.family == "electra" and checkpoint.head == "pretrainer"
    assert checkpoint.config == backbone.bert_config
    assert len(checkpoint.vocabulary) == 40
    imported = checkpoint.build()
    _same_deterministic_outputs(original, imported)
    # The discriminator alone, as the released checkpoints are usually used.
    discriminator = checkpoint.build(head=None)
    assert isinstance(discriminator, ElectraBackbone)


def test_tf1_names_translate_like_the_original_code():
    from kbert.convert import tf1

    assert tf1.tf1_name_to_hf(
        "module/bert/encoder/transformer/group_0/inner_group_0/attention_1/output/dense/kernel",
        "albert") == ("encoder.albert_layer_groups.0.albert_layers.0.attention.dense.weight", True)
    assert tf1.tf1_name_to_hf("cls/predictions/transform/LayerNorm/beta", "albert") == (
        "predictions.LayerNorm.bias", False)
    assert tf1.tf1_name_to_hf("generator/encoder/layer_3/output/LayerNorm/gamma", "electra") == (
        "generator.encoder.layer.3.output.LayerNorm.weight", False)
    assert tf1.tf1_name_to_hf("discriminator_predictions/dense_1/bias", "electra") == (
        "discriminator_predictions.dense_prediction.bias", False)
    assert tf1.tf1_name_to_hf("electra/embeddings_project/kernel", "electra") == (
        "embeddings_project.weight", True)
    assert tf1.tf1_name_to_hf("generator/embeddings/word_embeddings", "electra") is None
    assert tf1.family_of(["electra/embeddings/word_embeddings"]) == "electra"
    assert tf1.family_of(["bert/encoder/transformer/group_0/inner_group_0/LayerNorm/beta"]) \
        == "albert"


def test_unsupported_variants_are_refused_by_name(tmp_path):
    values = json.loads((FIXTURES / "albert" / "config.json").read_text())
    with pytest.raises(ValueError, match="inner_group_num=2"):
        kbert.convert.albert.config_from_hf({**values, "inner_group_num": 2})
    values = json.loads((FIXTURES / "distil_bert" / "config.json").read_text())
    with pytest.raises(ValueError, match="sinusoidal_pos_embds"):
        kbert.convert.distil_bert.config_from_hf({**values, "sinusoidal_pos_embds": True})
    shutil.copytree(FIXTURES / "electra", tmp_path / "e")
    generator_config = tmp_path / "e" / "generator" / "config.json"
    values = json.loads(generator_config.read_text())
    generator_config.write_text(json.dumps({**values, "num_attention_heads": 2}))
    with pytest.raises(ValueError, match="the generator has 2 heads"):
        kbert.convert.read(tmp_path / "e")
    values["model_type"] = "roberta"
    (tmp_path / "e" / "config.json").write_text(json.dumps(values))
    with pytest.raises(ValueError, match="model_type='roberta' is not supported"):
        kbert.convert.read(tmp_path / "e")


def test_albert_keeps_its_sentencepiece_tokenizer_through_every_format(tmp_path):
    from kbert.tokenizers import SentencePieceTokenizer

    checkpoint = kbert.convert.read(FIXTURES / "albert")
    assert checkpoint.vocabulary is None and checkpoint.lowercase
    assert isinstance(checkpoint.tokenizer(), SentencePieceTokenizer)
    kbert.convert.kbert_format.write(checkpoint, tmp_path / "kbert")
    assert sorted(p.name for p in (tmp_path / "kbert").iterdir()) == [
        "model.keras", "spiece.model", "tokenizer_config.json"]
    again = kbert.convert.read(tmp_path / "kbert")
    assert again.sentencepiece_model == checkpoint.sentencepiece_model
    check_against_transformers(again.build(), "albert")
