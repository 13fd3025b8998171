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
    # ModernBERT, Ettin and mmBERT (their config.json files and training configs).
    "modern_bert_base": (22, 768, 12),
    "modern_bert_large": (28, 1024, 16),
    "ettin_encoder_17m": (7, 256, 4),
    "ettin_encoder_32m": (10, 384, 6),
    "ettin_encoder_68m": (19, 512, 8),
    "ettin_encoder_150m": (22, 768, 12),
    "ettin_encoder_400m": (28, 1024, 16),
    "ettin_encoder_1b": (28, 1792, 28),
    "mm_bert_small": (22, 384, 6),
    "mm_bert_base": (22, 768, 12),
    # The domain BERTs: BERT-Base's shape (CodeBERT: RoBERTa-Base's).
    **{name: (12, 768, 12) for name in ("sci_bert", "bio_bert", "clinical_bert", "fin_bert",
                                        "legal_bert", "code_bert")},
}
# TinyBERT-4's feed-forward width is 1200, not 4 x 312 (Jiao et al. 2020).
# ModernBERT's is the width of the GeGLU's gated half (transformers' intermediate_size).
INTERMEDIATE_SIZES = {"tiny_bert_4l_312": 1200, "modern_bert_base": 1152,
                      "modern_bert_large": 2624, "ettin_encoder_17m": 384,
                      "ettin_encoder_32m": 576, "ettin_encoder_68m": 768,
                      "ettin_encoder_150m": 1152, "ettin_encoder_400m": 2624,
                      "ettin_encoder_1b": 3840, "mm_bert_small": 1152, "mm_bert_base": 1152}
# By family, then by preset where a release has its own vocabulary; others: 30522.
VOCABULARY_SIZES = {"albert": 30000, "roberta": 50265, "deberta_v3": 128100,
                    "modern_bert": 50368, "mm_bert_small": 256000, "mm_bert_base": 256000,
                    "sci_bert": 31090, "bio_bert": 28996, "clinical_bert": 28996}


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
    family = kbert.presets.get(name)["model"]
    assert config["vocabulary_size"] == VOCABULARY_SIZES.get(
        name, VOCABULARY_SIZES.get(family, 30522))


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


# transformers 4.57.6's ModernBertForMaskedLM / ModernBertModel built on the meta device from
# each preset's config (tests/fixtures/make_release_manifests.py builds the same classes); the
# published sizes they round to: 149M, 395M; Ettin 17M ... 1B; mmBERT 140M, 307M.
MODERN_BERT_COUNTS = {
    "modern_bert_base": (149_655_232, 149_014_272),
    "modern_bert_large": (395_881_664, 394_781_696),
    "ettin_encoder_17m": (16_913_600, 16_797_440),
    "ettin_encoder_32m": (32_081_344, 31_883_136),
    "ettin_encoder_68m": (68_457_664, 68_144_640),
    "ettin_encoder_150m": (149_655_232, 149_014_272),
    "ettin_encoder_400m": (395_881_664, 394_781_696),
    "ettin_encoder_1b": (1_031_314_112, 1_028_050_688),
    "mm_bert_small": (140_897_536, 140_493_696),
    "mm_bert_base": (307_786_240, 306_939_648),
}


@pytest.mark.parametrize("name", sorted(MODERN_BERT_COUNTS))
def test_modern_bert_parameter_counts(name):
    """The masked LM (the head's dense + LayerNorm and the decoder bias on the tied table)
    and the encoder, as transformers counts them for the same config."""
    mlm = shapes_only(lambda: kbert.presets.load(name, weights=None))
    assert (mlm.count_params(), mlm.backbone.count_params()) == MODERN_BERT_COUNTS[name]


def test_domain_bert_parameter_counts():
    """SciBERT's 31,090-token vocabulary adds 568 x 768 to BERT-Base's 109,482,240 (backbone
    with pooler); BioBERT's and ClinicalBERT's cased 28,996 remove 1,526 x 768; CodeBERT is
    RoBERTa-Base without a pooler: 124,645,632 (transformers' RobertaModel) - 590,592."""
    expected = {"sci_bert": 109_482_240 + 568 * 768, "bio_bert": 109_482_240 - 1526 * 768,
                "clinical_bert": 109_482_240 - 1526 * 768, "fin_bert": 109_482_240,
                "legal_bert": 109_482_240, "code_bert": 124_645_632 - 590_592}
    found = {name: shapes_only(lambda: kbert.presets.load(name, weights=None, head=None))
             .count_params() for name in expected}
    assert found == expected
