"""kbert.models.Backbone: every family's backbone is one, with the attributes the rest of kbert
reads, and no model skips a parent's constructor."""

import pathlib
import re

import numpy as np
import pytest

import kbert
from kbert import models
from kbert.models import Backbone

SIZES = dict(vocabulary_size=40, num_layers=2, hidden_size=16, num_heads=2,
             intermediate_size=24)
# What each family needs beyond SIZES to be small.
EXTRA = {"albert": dict(embedding_size=8, num_groups=1),
         "mobile_bert": dict(embedding_size=8, intra_bottleneck_size=8,
                             num_feedforward_networks=2)}
MODELS = pathlib.Path(kbert.__file__).parent / "models"


@pytest.mark.parametrize("family", list(models.FAMILIES))
def test_every_family_backbone_is_a_backbone(family):
    classes = models.FAMILIES[family]
    backbone = classes.backbone.from_config(classes.config(**SIZES, **EXTRA.get(family, {})))
    assert isinstance(backbone, Backbone)
    assert isinstance(backbone.config, classes.backbone.config_class)
    assert backbone.transformer_layers and backbone.token_embedding is not None
    ids = np.array([[2, 5, 7, 3]], "int32")
    inputs = {name: ids if name == "token_ids" else np.ones_like(ids) if name == "padding_mask"
              else np.zeros_like(ids) for name in backbone.input}
    outputs = backbone(inputs)
    assert outputs["sequence_output"].shape == (1, 4, 16)
    # `has_pooler` (what task heads read) says whether there is a pooled output.
    assert ("pooled_output" in outputs) == backbone.has_pooler == (backbone.pooler is not None)


def test_backbone_itself_is_not_a_model():
    with pytest.raises(TypeError, match="Backbone has no config_class"):
        Backbone(**SIZES)


def test_no_model_skips_a_parent_constructor():
    """`super(Parent, self).__init__` jumps over Parent's constructor: the shared part belongs
    in a base class (Backbone, ReplacedTokenDetection) instead."""
    sources = sorted(MODELS.rglob("*.py"))
    assert len(sources) > 20  # the search reads kbert/models, not an empty folder
    skips = [f"{path.relative_to(MODELS)}: {match.group(0)}" for path in sources
             for match in re.finditer(r"super\(\s*\w+\s*,\s*self\s*\)", path.read_text())]
    assert not skips
