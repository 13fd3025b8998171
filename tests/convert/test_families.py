"""ALBERT, DistilBERT and ELECTRA checkpoints: Hugging Face directories made by `transformers`
(tests/fixtures/make_hf_tiny.py, with its outputs), original TF1 releases, and round trips."""

import json
import shutil

import numpy as np
import pytest

import kbert.convert
from kbert.models import ElectraBackbone, ElectraPretrainer
from tests.convert import _checkpoints, _families

FIXTURES = _families.FIXTURES
POSITIONS = _families.POSITIONS
check_against_transformers = _families.check_against_transformers
_close = _families.close
@pytest.mark.parametrize("name,family,head,model_class", [
    ("distil_bert", "distil_bert", "pretrainer", "DistilBertPretrainer"),
    ("albert", "albert", "pretrainer", "AlbertPretrainer"),
    ("electra/generator", "electra", "mlm", "ElectraMaskedLM"),
    ("electra", "electra", "pretrainer", "ElectraPretrainer"),  # + its generator/ folder
])
@pytest.mark.slow
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
    assert kbert.convert.families.get("electra").pretrainer_arguments(
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


@pytest.mark.slow
def test_a_kbert_electra_pretrainer_exports_and_imports(tmp_path):
    backbone = ElectraBackbone(vocabulary_size=40, num_layers=2, hidden_size=16, num_heads=1,
                               intermediate_size=32, embedding_size=12, max_sequence_length=24)
    original = ElectraPretrainer(backbone, generator_hidden_fraction=0.5)
    _checkpoints.randomise(original)
    kbert.convert.save_hugging_face(original, tmp_path / "hf")
    imported = kbert.convert.load(tmp_path / "hf")
    assert isinstance(imported, ElectraPretrainer)
    assert imported.generator.hidden_size == 8
    _same_deterministic_outputs(original, imported)


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

def test_albert_tf1_release_imports_with_the_outputs_of_transformers(tmp_path):
    hf = kbert.convert.read(FIXTURES / "albert")
    release = _families.write_albert_tf1_release(tmp_path / "albert_base")
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
        tf1_name, transpose = _families.tf1_name(name.removeprefix("generator."),
                                        [("dense_prediction", "dense_1")])
        variables[scope + tf1_name] = value.T if transpose else value
    return variables


@pytest.mark.slow
def test_electra_tf1_release_imports_as_a_whole_pretrainer(tmp_path):
    # The release has no config: one head per 64 units (here 1) and 4 x width feed-forward.
    backbone = ElectraBackbone(vocabulary_size=40, num_layers=2, hidden_size=16, num_heads=1,
                               intermediate_size=32, embedding_size=12, max_sequence_length=24,
                               activation="gelu_approximate")
    original = ElectraPretrainer(backbone, generator_hidden_fraction=0.5)
    _checkpoints.randomise(original, seed=4)
    variables = _electra_tf1_variables(kbert.convert.Checkpoint.from_model(original).weights)
    assert "generator/encoder/layer_1/attention/self/query/kernel" in variables
    assert "discriminator_predictions/dense_1/kernel" in variables
    release = tmp_path / "electra_small"
    release.mkdir()
    _families.save_tf1(variables, release / "electra_small")
    (release / "checkpoint").write_text('model_checkpoint_path: "electra_small"\n')
    (release / "vocab.txt").write_text("".join(f"[unused{i}]\n" for i in range(35))
                                       + "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    checkpoint = kbert.convert.read(release)
    assert checkpoint.family == "electra" and checkpoint.head == "pretrainer"
    assert checkpoint.config == backbone.config
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
    values["model_type"] = "gpt2"
    (tmp_path / "e" / "config.json").write_text(json.dumps(values))
    with pytest.raises(ValueError, match="model_type='gpt2' is not supported"):
        kbert.convert.read(tmp_path / "e")


@pytest.mark.slow
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


def test_sentencepiece_models_save_with_their_tokenizer_and_teach(tmp_path):
    from kbert.training.distillation import teacher_source

    checkpoint = kbert.convert.read(FIXTURES / "albert")
    kbert.convert.save_hugging_face(checkpoint.build(), tmp_path / "hf",
                                    vocabulary=checkpoint.tokenizer())
    assert (tmp_path / "hf" / "spiece.model").read_bytes() == checkpoint.sentencepiece_model
    assert not (tmp_path / "hf" / "vocab.txt").exists()
    # Distillation takes the teacher's tokenizer, of any kind: ALBERT's spiece.model.
    assert teacher_source(str(FIXTURES / "albert")).tokenizer.model == (
        checkpoint.sentencepiece_model)
