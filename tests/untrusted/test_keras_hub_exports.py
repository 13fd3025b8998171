"""docs/untrusted.md: "keras-hub's backbone exports hold nothing else and pass" kbert's
SavedModel check. Tiny keras-hub backbones, exported as keras-hub's users export them
(`backbone.export(path, format="tf_saved_model")`), pass `check_saved_model` and load
through `load_saved_model` with the same outputs."""

import keras_hub
import numpy as np
import pytest

from kbert.untrusted import check_saved_model, load_saved_model

SIZE = dict(num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
            max_sequence_length=24, dropout=0.0)
VOCABULARY = 40
# BERT's, and DeBERTa-v3's (disentangled attention: other ops). keras-hub's ALBERT, DistilBERT,
# ELECTRA and RoBERTa backbones passed too when this test was written; their blocks are
# keras-hub's TransformerEncoder, as BERT's are, so they are left out of the suite's time
# (about 8 s each).
BACKBONES = {
    "bert": lambda: keras_hub.models.BertBackbone(vocabulary_size=VOCABULARY, **SIZE),
    "deberta_v3": lambda: keras_hub.models.DebertaV3Backbone(vocabulary_size=VOCABULARY,
                                                             bucket_size=8, **SIZE),
}


def _inputs(backbone):
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(1, VOCABULARY, (2, 8)).astype("int32"),
         "padding_mask": np.array([[1] * 8, [1] * 5 + [0] * 3], "int32"),
         "segment_ids": np.zeros((2, 8), "int32")}
    return {name: x[name] for name in backbone.input}


@pytest.mark.parametrize("family", ["bert", pytest.param("deberta_v3", marks=pytest.mark.slow)])
def test_a_keras_hub_backbone_export_passes_the_check_and_loads(family, tmp_path):
    backbone = BACKBONES[family]()
    path = str(tmp_path / family)
    backbone.export(path, format="tf_saved_model", verbose=False)
    check_saved_model(path)  # raises UnsafeSavedModelError naming what it refuses
    x = _inputs(backbone)
    expected = backbone(x)
    loaded = load_saved_model(path)  # kept: its variables live as long as it does
    got = loaded.serve(x)
    if not isinstance(expected, dict):  # keras-hub's DeBERTa-v3 backbone: one tensor
        got, expected = {"output": got}, {"output": expected}
    assert set(got) == set(expected)
    for key in expected:
        np.testing.assert_allclose(np.asarray(got[key]), np.asarray(expected[key]), atol=1e-5,
                                   rtol=0, err_msg=key)
