import json
from pathlib import Path

import pytest

import kbert
from kbert.models import BertBackbone, BertPretrainer
from tests.helpers import shapes_only

EXPECTED = {  # name: (layers, hidden, heads), from the issue and the papers
    "bert_tiny": (2, 128, 2),
    "bert_mini": (4, 256, 4),
    "bert_small": (4, 512, 8),
    "bert_medium": (8, 512, 8),
    "bert_base": (12, 768, 12),
    "bert_large": (24, 1024, 16),
    "albert_base": (12, 768, 12),
    "albert_large": (24, 1024, 16),
    "albert_xlarge": (24, 2048, 16),
    "albert_xxlarge": (12, 4096, 64),
    "distil_bert_base": (6, 768, 12),
    "electra_small": (12, 256, 4),
    "electra_base": (12, 768, 12),
    "electra_large": (24, 1024, 16),
    "roberta_base": (12, 768, 12),
    "roberta_large": (24, 1024, 16),
    "deberta_v3_xsmall": (12, 384, 6),
    "deberta_v3_small": (6, 768, 12),
    "deberta_v3_base": (12, 768, 12),
    "deberta_v3_large": (24, 1024, 16),
    "mobile_bert": (24, 512, 4),
    "tiny_bert_4l_312": (4, 312, 12),
    "tiny_bert_6l_768": (6, 768, 12),
}
# TinyBERT-4's feed-forward width is 1200, not 4 x 312 (Jiao et al. 2020).
INTERMEDIATE_SIZES = {"tiny_bert_4l_312": 1200}
VOCABULARY_SIZES = {"albert": 30000, "roberta": 50265, "deberta_v3": 128100}  # others: 30522


def test_list():
    assert set(EXPECTED) == set(kbert.presets.list())
    assert kbert.presets.list() == sorted(kbert.presets.list())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_files_hold_the_published_architectures(name):
    config = kbert.presets.get(name)["config"]
    layers, hidden, heads = EXPECTED[name]
    assert (config["num_layers"], config["hidden_size"], config["num_heads"]) == (layers, hidden, heads)
    # MobileBERT's feed-forward networks run inside its 128-wide bottleneck.
    inner = config.get("intra_bottleneck_size", hidden)
    assert config["intermediate_size"] == INTERMEDIATE_SIZES.get(name, 4 * inner)
    assert config["vocabulary_size"] == VOCABULARY_SIZES.get(kbert.presets.get(name)["model"],
                                                             30522)


def test_preset_folder_is_data_only():
    folder = Path(__file__).resolve().parent.parent / "presets"
    files = sorted(p.name for p in folder.iterdir())
    assert files and all(f.endswith(".json") for f in files), files
    for path in folder.iterdir():
        json.loads(path.read_text())


@pytest.mark.parametrize("name", ["bert_tiny", "bert_mini", "bert_small"])
@pytest.mark.slow
def test_load_heads(name):
    pretrainer = kbert.presets.load(name, weights=None)
    assert isinstance(pretrainer, BertPretrainer) and pretrainer.next_sentence_prediction
    mlm = kbert.presets.load(name, head="mlm", weights=None)
    assert isinstance(mlm, BertPretrainer) and not mlm.next_sentence_prediction
    backbone = kbert.presets.load(name, head=None, weights=None)
    assert isinstance(backbone, BertBackbone)
    assert backbone.config.num_layers == EXPECTED[name][0]


def test_overrides_and_dtype():
    backbone = kbert.presets.load(
        "bert_tiny", head=None, weights=None, max_sequence_length=128, dropout=0.0, dtype="mixed_bfloat16"
    )
    assert backbone.config.max_sequence_length == 128
    assert backbone.config.dropout == 0.0
    assert backbone.dtype_policy.name == "mixed_bfloat16"


def test_errors_name_the_bad_value_and_the_choices():
    with pytest.raises(ValueError, match="Unknown preset 'bert_huge'. Available: albert_base, albert_large, .*, bert_base, bert_large"):
        kbert.presets.load("bert_huge")
    with pytest.raises(ValueError, match="Unknown head 'classifier'. Allowed: 'pretrainer', 'mlm', None"):
        kbert.presets.load("bert_tiny", head="classifier")
    with pytest.raises(ValueError, match="weights=3: expected 'pretrained'"):
        kbert.presets.load("bert_tiny", weights=3)
    with pytest.raises(ValueError, match="Unknown BERT config field 'hidden'"):
        kbert.presets.load("bert_tiny", weights=None, hidden=3)
    with pytest.raises(ValueError, match="hidden_size=128 is not divisible by num_heads=3"):
        kbert.presets.load("bert_tiny", weights=None, num_heads=3)


def test_parameter_counts():
    """Known counts (Hugging Face BertForPreTraining / BertModel, uncased vocab 30522):

    bert_base:  110,106,428 with the MLM and NSP heads; 109,482,240 backbone (with pooler).
    bert_large: 336,226,108 with the MLM and NSP heads; 335,141,888 backbone (with pooler).
    """
    base = shapes_only(lambda: kbert.presets.load("bert_base", weights=None))
    assert base.count_params() == 110_106_428
    assert base.backbone.count_params() == 109_482_240
    del base
    large = shapes_only(lambda: kbert.presets.load("bert_large", weights=None))
    assert large.count_params() == 336_226_108
    assert large.backbone.count_params() == 335_141_888


def test_tiny_bert_parameter_counts():
    """TinyBERT-4 (huawei-noah/TinyBERT_General_4L_312D): 14,350,248 parameters in the
    4-layer backbone with pooler, as its BertModel; TinyBERT-6 is BERT-Base's first 6 layers
    in size: 109,482,240 - 6 x 7,087,872 = 66,955,008."""
    small = shapes_only(lambda: kbert.presets.load("tiny_bert_4l_312", weights=None, head=None))
    assert small.count_params() == 14_350_248
    assert small.pooler is not None
    del small
    six = shapes_only(lambda: kbert.presets.load("tiny_bert_6l_768", weights=None, head=None))
    assert six.count_params() == 66_955_008
