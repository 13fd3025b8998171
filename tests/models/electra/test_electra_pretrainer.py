"""ElectraPretrainer: generator size and sharing, sampling, the RTD labels and loss, saving."""

import keras
import numpy as np
import pytest
from keras import ops

import kbert
from kbert.layers.masked_token_sampler import scatter_positions
from kbert.models import ElectraBackbone, ElectraMaskedLM, ElectraPretrainer
from kbert.models.electra.electra_generator import generator_size
from tests.helpers import TINY, random_batch


def make(**kwargs):
    backbone = ElectraBackbone(**{**TINY, "dropout": 0.0, "attention_dropout": 0.0},
                               embedding_size=16)
    return ElectraPretrainer(backbone, seed=5, **kwargs)


def test_generator_sizes_follow_google_research_electra():
    # get_generator_config: hidden x fraction, 4 x hidden feed-forward, one head per 64 units.
    assert generator_size(kbert.presets.config("electra_small")) == (64, 12, 1, 256)
    assert generator_size(kbert.presets.config("electra_base")) == (192, 12, 3, 768)
    assert generator_size(kbert.presets.config("electra_base"), 1 / 3) == (256, 12, 4, 1024)
    assert generator_size(kbert.presets.config("electra_large")) == (256, 24, 4, 1024)
    with pytest.raises(ValueError, match=r"generator_hidden_fraction must be in \(0, 1\], got 2"):
        generator_size(kbert.presets.config("electra_small"), 2)


def test_generator_shares_the_discriminator_embeddings():
    model = make()
    backbone = model.backbone
    assert model.generator.hidden_size == 8
    assert model.generator.projection.kernel.shape == (16, 8)  # E=16 -> generator width
    assert model.mlm_head.token_embedding is backbone.token_embedding  # tied output table
    # The embeddings exist once: the pretrainer adds only generator + heads.
    own = {id(w) for w in backbone.weights}
    added = [w for w in model.weights if id(w) not in own]
    assert not [w.path for w in added if "embedding" in w.path]
    tied = backbone.token_embedding.count_params()  # counted by the head, owned by backbone
    assert sum(int(np.prod(w.shape)) for w in added) == (
        model.generator.count_params() + model.mlm_head.count_params() - tied
        + model.rtd_head.count_params())


def test_outputs_and_replacements_only_at_masked_positions():
    model = make()
    features, _ = random_batch()
    outputs = model(features)
    assert tuple(outputs["mlm_logits"].shape) == (4, 5, TINY["vocabulary_size"])
    assert tuple(outputs["rtd_logits"].shape) == (4, 16)
    replaced = ops.convert_to_numpy(outputs["replaced_token_ids"])
    changed = replaced != features["token_ids"]
    masked = np.zeros_like(changed)
    for row, positions in enumerate(features["mask_positions"]):
        masked[row, positions[positions > 0]] = True
    assert not (changed & ~masked).any()
    assert changed.any()


def _rtd_step(model, features, labels):
    outputs = model(features)
    loss = model.compute_loss(x=features, y=labels, y_pred=outputs)
    return outputs, float(loss)


@pytest.mark.parametrize("sample_original", [True, False])
def test_a_sample_equal_to_the_original_is_not_replaced(sample_original):
    """The generator is forced (bias 1e4) to sample one token everywhere: the original
    token (labels all 0) or another one (labels 1 at the valid masked positions)."""
    model = make()
    features, labels = random_batch()
    original = 7
    labels["mask_ids"][:] = original
    forced = original if sample_original else 9
    bias = np.zeros(TINY["vocabulary_size"], "float32")
    bias[forced] = 1e4
    model.mlm_head.output_bias.assign(bias)
    outputs, loss = _rtd_step(model, features, labels)
    replaced = ops.convert_to_numpy(outputs["replaced_token_ids"])
    expected_labels = np.zeros((4, 16), "float32")
    for row, positions in enumerate(features["mask_positions"]):
        positions = positions[positions > 0]
        assert (replaced[row, positions] == forced).all()
        expected_labels[row, positions] = 0.0 if sample_original else 1.0
    logits = ops.convert_to_numpy(outputs["rtd_logits"])
    mask = features["padding_mask"].astype("float32")
    bce = np.logaddexp(0, logits) - expected_labels * logits
    rtd_loss = (bce * mask).sum() / mask.sum()
    mlm_loss = float(model.mlm_loss_tracker.result())
    np.testing.assert_allclose(float(model.rtd_loss_tracker.result()), rtd_loss, rtol=1e-5)
    # loss = generator MLM + 50 x RTD
    np.testing.assert_allclose(loss, mlm_loss + 50 * rtd_loss, rtol=1e-5)


def test_scatter_positions_skips_the_padding_slot():
    token_ids = np.arange(12).reshape(2, 6)
    positions = np.array([[2, 4, 0], [1, 0, 0]])
    values = np.array([[90, 91, 92], [93, 94, 95]])
    got = ops.convert_to_numpy(scatter_positions(token_ids, positions, values))
    np.testing.assert_array_equal(got, [[0, 1, 90, 3, 91, 5], [6, 93, 8, 9, 10, 11]])


@pytest.mark.slow
def test_no_gradient_reaches_the_generator_through_the_sampling():
    """With the MLM weight at 0, only the RTD loss trains: the generator must not move."""
    model = make(mlm_loss_weight=0.0)
    features, labels = random_batch()
    model.compile(optimizer=keras.optimizers.SGD(0.5), jit_compile=False)
    shared = {id(w) for w in model.backbone.weights}  # the tied token table trains (RTD)
    generator = [w for w in model.generator.weights + model.mlm_head.weights
                 if id(w) not in shared]
    before = [ops.convert_to_numpy(w).copy() for w in generator]
    disc_before = ops.convert_to_numpy(model.backbone.transformer_layers[0].weights[0]).copy()
    model.train_on_batch(features, labels)
    for w, value in zip(generator, before):
        np.testing.assert_array_equal(ops.convert_to_numpy(w), value, err_msg=w.path)
    assert not np.array_equal(
        ops.convert_to_numpy(model.backbone.transformer_layers[0].weights[0]), disc_before)


@pytest.mark.slow
def test_it_learns_to_detect_replacements():
    model = make()
    features, labels = random_batch(batch=8, seed=3)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    first = model.train_on_batch(features, labels, return_dict=True)
    for _ in range(40):
        logs = model.train_on_batch(features, labels, return_dict=True)
    assert logs["rtd_loss"] < 0.8 * first["rtd_loss"], (first, logs)
    assert logs["mlm_loss"] < first["mlm_loss"]


def test_keras_round_trip_and_the_discriminator_is_the_backbone(tmp_path):
    model = make()
    features, _ = random_batch()
    path = str(tmp_path / "electra.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, ElectraPretrainer)
    assert restored.get_config() == model.get_config()
    got, expected = restored(features), model(features)
    np.testing.assert_allclose(ops.convert_to_numpy(got["mlm_logits"]),
                               ops.convert_to_numpy(expected["mlm_logits"]), atol=1e-6)
    x = {k: features[k] for k in model.backbone.input}
    for key, value in model.backbone(x).items():
        np.testing.assert_array_equal(ops.convert_to_numpy(restored.backbone(x)[key]),
                                      ops.convert_to_numpy(value))
    head = restored.rtd_head(model.backbone(x)["sequence_output"])
    np.testing.assert_allclose(ops.convert_to_numpy(head),
                               ops.convert_to_numpy(model.rtd_head(model.backbone(x)
                                                                   ["sequence_output"])),
                               atol=1e-6)


def test_heads_of_the_electra_presets():
    assert isinstance(kbert.models.build("electra", kbert.presets.config("electra_small",
                                                                        num_layers=1)),
                      ElectraPretrainer)
    mlm = kbert.models.build("electra", kbert.presets.config("electra_small", num_layers=1),
                             head="mlm")
    assert type(mlm) is ElectraMaskedLM and not mlm.next_sentence_prediction
