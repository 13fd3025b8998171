import keras_hub
import numpy as np
import pytest

import kbert
from kbert.models import AlbertBackbone, AlbertConfig, AlbertPretrainer
from tests.helpers import TINY, random_batch, shapes_only
from tests.models import _family_checks

ALBERT = dict(TINY, num_layers=4, embedding_size=16)


def test_shapes_and_sharing():
    backbone = AlbertBackbone(**ALBERT, num_groups=2)
    out = _family_checks.numpy_outputs(backbone, _family_checks.inputs_for(backbone))
    assert out["sequence_output"].shape == (4, 16, 32) and out["pooled_output"].shape == (4, 32)
    # 4 layers, 2 groups: two blocks of weights; one block with num_groups=1.
    assert len(backbone.transformer_layers) == 2
    one = AlbertBackbone(**ALBERT)
    block = one.transformer_layers[0].count_params()
    assert one.count_params() == backbone.count_params() - block
    assert one.embeddings.projection is not None  # 16 -> 32


def test_config_validation():
    with pytest.raises(ValueError, match="num_layers=4 is not divisible by num_groups=3"):
        AlbertConfig(**ALBERT, num_groups=3)
    assert AlbertConfig.from_dict({**ALBERT, "num_hidden_groups": 2}).num_groups == 2
    with pytest.raises(ValueError, match="Unknown ALBERT config field 'groups'"):
        AlbertConfig.from_dict({**ALBERT, "groups": 2})


def test_config_and_keras_round_trip(tmp_path):
    _family_checks.check_config_and_keras_round_trip(AlbertBackbone(**ALBERT, num_groups=2),
                                                     tmp_path)


@pytest.mark.parametrize("num_groups", [1, 2])
def test_parity_with_keras_hub(num_groups):
    reference = keras_hub.models.AlbertBackbone(
        vocabulary_size=ALBERT["vocabulary_size"], num_layers=4, num_heads=4,
        embedding_dim=16, hidden_dim=32, intermediate_dim=64, num_groups=num_groups,
        max_sequence_length=24)
    _family_checks.check_parity(reference, AlbertBackbone(**ALBERT, num_groups=num_groups))


@pytest.mark.slow
def test_pretrainer_trains_mlm_and_sop():
    model = AlbertPretrainer(AlbertBackbone(**ALBERT))
    model.compile(optimizer="adam")
    features, labels = random_batch()
    logs = model.train_on_batch(features, labels, return_dict=True)
    assert {"mlm_loss", "nsp_loss"} <= set(logs) and np.isfinite(logs["loss"])
    # The MLM head maps H=32 to the embedding width 16 and ties to the 16-wide table.
    assert tuple(model.mlm_head.dense.kernel.shape) == (32, 16)


@pytest.mark.parametrize("name,paper_millions", [("albert_base", 12), ("albert_large", 18),
                                                 ("albert_xlarge", 60)])
def test_preset_parameter_counts(name, paper_millions):
    """Within 2% of the paper's counts (Lan et al. 2019, table 1), heads included; the backbone
    equals Hugging Face's AlbertModel of the released v2 configs exactly."""
    hugging_face = {"albert_base": 11_683_584, "albert_large": 17_683_968,
                    "albert_xlarge": 58_724_864}
    model = shapes_only(lambda: kbert.presets.load(name, weights=None))
    assert isinstance(model, AlbertPretrainer) and model.next_sentence_prediction
    assert model.backbone.count_params() == hugging_face[name]
    assert abs(model.count_params() / (paper_millions * 1e6) - 1) < 0.02


def test_xxlarge_parameter_count():
    """The paper says 235M; the released xxlarge architecture (H4096, I16384, L12, E128) has
    222.6M (Hugging Face's albert-xxlarge-v2: 222,595,584), 5% less. kbert builds the released
    architecture."""
    backbone = shapes_only(lambda: kbert.presets.load("albert_xxlarge", head=None, weights=None))
    assert backbone.count_params() == 222_595_584
