import keras
import numpy as np
import pytest

from kbert.models import BertBackbone, BertConfig
from tests.helpers import TINY, random_batch

FEATURES, _ = random_batch()
INPUTS = {k: FEATURES[k] for k in ("token_ids", "segment_ids", "padding_mask")}


def numpy_outputs(model, inputs=INPUTS):
    return {k: keras.ops.convert_to_numpy(v) for k, v in model(inputs).items()}


def test_output_shapes():
    out = numpy_outputs(BertBackbone(**TINY))
    assert out["sequence_output"].shape == (4, 16, 32)
    assert out["pooled_output"].shape == (4, 32)


def test_config_round_trip():
    backbone = BertBackbone(**TINY, activation="gelu", embedding_size=16, name="b")
    config = backbone.get_config()
    assert BertBackbone.from_config(config).get_config() == config
    assert backbone.config == BertConfig(**TINY, activation="gelu", embedding_size=16)


def test_invalid_config_names_the_values():
    with pytest.raises(ValueError, match="hidden_size=30 is not divisible by num_heads=4"):
        BertBackbone(**{**TINY, "hidden_size": 30})


def test_padding_does_not_change_real_tokens():
    backbone = BertBackbone(**TINY)
    full = numpy_outputs(backbone)["sequence_output"]
    length = int(INPUTS["padding_mask"][1].sum())
    cut = {k: v[1:2, :length] for k, v in INPUTS.items()}
    np.testing.assert_allclose(
        numpy_outputs(backbone, cut)["sequence_output"][0], full[1, :length], atol=1e-5
    )


def test_parity_with_keras_hub():
    import keras_hub

    from kbert.convert.keras_hub import bert_weights_from_keras_hub

    reference = keras_hub.models.BertBackbone(
        vocabulary_size=TINY["vocabulary_size"],
        num_layers=TINY["num_layers"],
        num_heads=TINY["num_heads"],
        hidden_dim=TINY["hidden_size"],
        intermediate_dim=TINY["intermediate_size"],
        max_sequence_length=TINY["max_sequence_length"],
    )
    # Random, non-trivial values everywhere (biases and LayerNorm too), so a swapped or
    # missing weight shows up in the outputs.
    rng = np.random.default_rng(7)
    for w in reference.weights:
        w.assign(rng.normal(scale=0.2, size=w.shape).astype("float32") + (w.path.endswith("gamma")))
    ours = bert_weights_from_keras_hub(reference, BertBackbone(**TINY))  # tanh GELU in both
    expected = {k: keras.ops.convert_to_numpy(v) for k, v in reference(INPUTS).items()}
    got = numpy_outputs(ours)
    mask = INPUTS["padding_mask"].astype(bool)
    np.testing.assert_allclose(got["sequence_output"][mask], expected["sequence_output"][mask], atol=1e-5)
    np.testing.assert_allclose(got["pooled_output"], expected["pooled_output"], atol=1e-5)
    assert ours.count_params() == reference.count_params()


def test_keras_save_and_load(tmp_path):
    backbone = BertBackbone(**TINY, embedding_size=16)
    path = str(tmp_path / "backbone.keras")
    backbone.save(path)
    restored = keras.saving.load_model(path)  # safe_mode stays on (the default)
    assert isinstance(restored, BertBackbone)
    for key, value in numpy_outputs(backbone).items():
        np.testing.assert_array_equal(numpy_outputs(restored)[key], value)


def test_mixed_bfloat16(tmp_path):
    backbone = BertBackbone(**TINY, dtype="mixed_bfloat16")
    out = backbone(INPUTS)
    assert keras.backend.standardize_dtype(out["sequence_output"].dtype) == "bfloat16"
    assert all(keras.backend.standardize_dtype(w.dtype) == "float32" for w in backbone.weights)
    path = str(tmp_path / "bf16.keras")
    backbone.save(path)
    restored = keras.saving.load_model(path)
    assert restored.dtype_policy.name == "mixed_bfloat16"
    assert keras.backend.standardize_dtype(restored(INPUTS)["pooled_output"].dtype) == "bfloat16"
