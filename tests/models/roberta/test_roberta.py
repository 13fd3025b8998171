import keras
import keras_hub
import numpy as np
import pytest

import kbert
from kbert.models import RobertaBackbone, RobertaConfig, RobertaPretrainer
from tests.helpers import TINY, random_batch, shapes_only
from tests.models import _family_checks


def test_no_segment_input_no_pooler_and_offset_positions():
    backbone = RobertaBackbone(**TINY)
    assert sorted(backbone.input) == ["padding_mask", "token_ids"]
    out = _family_checks.numpy_outputs(backbone, _family_checks.inputs_for(backbone))
    assert list(out) == ["sequence_output"] and out["sequence_output"].shape == (4, 16, 32)
    assert backbone.pooler is None
    assert backbone.embeddings.segment_embedding.input_dim == 1  # Hugging Face's one row
    # max_sequence_length tokens, and the two rows before the first position.
    assert tuple(backbone.embeddings.position_embedding.shape) == (24 + 2, 32)
    config = backbone.config
    assert (config.activation, config.layer_norm_epsilon, config.type_vocab_size) == (
        "gelu", 1e-5, 1)


def test_positions_count_over_the_tokens_as_transformers_does():
    """Left padding does not move the tokens' positions (and so their outputs): row 1 is
    row 0 shifted right by 3 pads."""
    backbone = RobertaBackbone(**{**TINY, "dropout": 0.0})
    _family_checks.randomize(backbone)
    tokens = np.random.default_rng(0).integers(5, 97, (1, 10)).astype("int32")
    x = {"token_ids": np.concatenate([np.concatenate([tokens, np.ones((1, 3), "int32")], 1),
                                      np.concatenate([np.ones((1, 3), "int32"), tokens], 1)]),
         "padding_mask": np.array([[1] * 10 + [0] * 3, [0] * 3 + [1] * 10], "int32")}
    out = keras.ops.convert_to_numpy(backbone(x)["sequence_output"])
    np.testing.assert_allclose(out[0, :10], out[1, 3:], atol=1e-5, rtol=0)
    # The table's rows: padding at row 1, the first token at row 2 (row 0 is never used).
    table = keras.ops.convert_to_numpy(backbone.embeddings.position_embedding)
    positions = keras.ops.convert_to_numpy(backbone.embeddings._offset_positions(
        x["token_ids"], x["padding_mask"]))
    np.testing.assert_array_equal(positions[1, :3], table[[1, 1, 1]])
    np.testing.assert_array_equal(positions[1, 3:], table[2:12])


def test_config_and_keras_round_trip(tmp_path):
    _family_checks.check_config_and_keras_round_trip(RobertaBackbone(**TINY), tmp_path)


def test_parity_with_keras_hub():
    reference = keras_hub.models.RobertaBackbone(
        vocabulary_size=TINY["vocabulary_size"], num_layers=2, num_heads=4, hidden_dim=32,
        intermediate_dim=64, max_sequence_length=24, dropout=0.0)
    ours = RobertaBackbone(**TINY)
    _family_checks.randomize(reference)
    from kbert.convert.keras_hub import weights_from_keras_hub

    weights_from_keras_hub(reference, ours)
    x = _family_checks.inputs_for(ours)  # right-padded: keras-hub counts from column 0
    mask = x["padding_mask"].astype(bool)
    expected = keras.ops.convert_to_numpy(reference(x))
    got = _family_checks.numpy_outputs(ours, x)["sequence_output"]
    np.testing.assert_allclose(got[mask], expected[mask], atol=1e-5, rtol=0)
    # keras-hub has neither the two rows before the first position nor the segment row.
    assert ours.count_params() == reference.count_params() + 3 * 32


def test_mixed_bfloat16(tmp_path):
    backbone = RobertaBackbone(**TINY, dtype="mixed_bfloat16")
    x = _family_checks.inputs_for(backbone)
    out = backbone(x)["sequence_output"]
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
    assert all(keras.backend.standardize_dtype(w.dtype) == "float32" for w in backbone.weights)
    backbone.save(str(tmp_path / "bf16.keras"))
    restored = keras.saving.load_model(str(tmp_path / "bf16.keras"))
    assert restored.dtype_policy.name == "mixed_bfloat16"
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(restored(x)["sequence_output"]),
                                  keras.ops.convert_to_numpy(out))


def test_pretrainer_is_mlm_only():
    model = RobertaPretrainer(RobertaBackbone(**TINY))
    assert not model.next_sentence_prediction and sorted(model.input) == [
        "mask_positions", "padding_mask", "token_ids"]
    features, _ = random_batch()
    out = model({k: v for k, v in features.items() if k in model.input})
    assert list(out) == ["mlm_logits"] and tuple(out["mlm_logits"].shape) == (4, 5, 97)
    with pytest.raises(ValueError, match="next_sentence_prediction must be False"):
        RobertaPretrainer(RobertaBackbone(**TINY), next_sentence_prediction=True)


@pytest.mark.slow
def test_pretrainer_trains_and_round_trips(tmp_path):
    model = RobertaPretrainer(RobertaBackbone(**TINY))
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    features, labels = random_batch()
    features = {k: v for k, v in features.items() if k in model.input}
    first = model.train_on_batch(features, labels, return_dict=True)
    assert sorted(first) == ["loss", "mlm_accuracy", "mlm_loss"] and np.isfinite(first["loss"])
    for _ in range(5):
        last = model.train_on_batch(features, labels, return_dict=True)
    assert last["loss"] < first["loss"]
    model.save(str(tmp_path / "pretrainer.keras"))
    restored = keras.saving.load_model(str(tmp_path / "pretrainer.keras"))
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(restored(features)["mlm_logits"]),
        keras.ops.convert_to_numpy(model(features)["mlm_logits"]))


@pytest.mark.parametrize("name,count", [
    # transformers' RobertaModel(add_pooling_layer=False): 124,645,632 and 355,359,744 with
    # its pooler, which the released checkpoints carry untrained and kbert does not build.
    ("roberta_base", 124_055_040),
    ("roberta_large", 354_310_144),
])
def test_presets_have_the_parameter_counts_of_transformers(name, count):
    backbone = shapes_only(lambda: kbert.presets.load(name, head=None, weights=None))
    assert isinstance(backbone, RobertaBackbone)
    assert backbone.count_params() == count
    assert kbert.presets.get(name)["tokenizer"]["type"] == "bpe"


def test_preset_configs():
    for name, shape in (("roberta_base", (12, 768, 12, 3072)),
                        ("roberta_large", (24, 1024, 16, 4096))):
        config = kbert.presets.config(name)
        assert isinstance(config, RobertaConfig)
        assert (config.num_layers, config.hidden_size, config.num_heads,
                config.intermediate_size) == shape
        assert (config.vocabulary_size, config.max_sequence_length) == (50265, 512)
