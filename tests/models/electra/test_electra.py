import keras_hub
import pytest

import kbert
from kbert.models import ElectraBackbone
from tests.helpers import TINY, shapes_only
from tests.models import _family_checks


@pytest.mark.parametrize("embedding_size", [16, None])
def test_parity_with_keras_hub(embedding_size):
    reference = keras_hub.models.ElectraBackbone(
        vocab_size=TINY["vocabulary_size"], num_layers=2, num_heads=4, hidden_dim=32,
        embedding_dim=embedding_size or 32, intermediate_dim=64, max_sequence_length=24)
    ours = ElectraBackbone(**TINY, embedding_size=embedding_size)
    assert (ours.embeddings.projection is None) == (embedding_size is None)
    _family_checks.check_parity(reference, ours)


def test_config_and_keras_round_trip(tmp_path):
    _family_checks.check_config_and_keras_round_trip(ElectraBackbone(**TINY, embedding_size=16),
                                                     tmp_path)


def test_presets():
    # The paper gives 14M for ELECTRA-Small. 13,548,800 includes keras-hub's tanh pooler
    # (256 x 256 + 256 = 65,792), which the released discriminator does not have.
    small = shapes_only(lambda: kbert.presets.load("electra_small", head=None, weights=None))
    assert small.count_params() == 13_548_800
    assert small.count_params() - small.pooler.count_params() == 13_483_008
    assert small.embeddings.projection is not None  # 128 -> 256
