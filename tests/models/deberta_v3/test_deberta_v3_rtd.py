import keras
import numpy as np
import pytest

import kbert.convert
from kbert.models import DebertaV3Backbone, DebertaV3RtdPretrainer
from tests.helpers import TINY, random_batch
from tests.models import _family_checks

DEBERTA = dict(TINY, position_buckets=4, num_layers=2)


def _batch(model):
    features, labels = random_batch()
    return {k: features[k] for k in model.input}, labels


def _numpy(variable):
    return keras.ops.convert_to_numpy(variable).copy()


def test_structure_and_zero_delta():
    backbone = DebertaV3Backbone(**DEBERTA)
    model = DebertaV3RtdPretrainer(backbone, seed=1)
    assert model.generator.config.num_layers == 1  # half the depth, the same width
    assert model.generator.config.hidden_size == backbone.config.hidden_size
    assert model.mlm_head.token_embedding is model.generator.token_embedding
    assert not np.any(_numpy(backbone.embeddings.token_embedding.embeddings))  # the delta
    x, _ = _batch(model)
    out = model(x)
    assert tuple(out["rtd_logits"].shape) == (4, 16)
    # With a zero delta the discriminator reads the generator's table exactly.
    table = _numpy(model.generator.embeddings.token_embedding.embeddings)
    ids = x["token_ids"]
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(backbone.embeddings.lookup(ids)), table[ids])
    with pytest.raises(ValueError, match="discriminator"):
        kbert.convert.Checkpoint.from_model(model)


@pytest.mark.slow
def test_rtd_loss_gives_the_generator_table_no_gradient_and_training_lowers_the_loss():
    model = DebertaV3RtdPretrainer(DebertaV3Backbone(**DEBERTA), seed=3, mlm_loss_weight=0.0)
    x, labels = _batch(model)
    model.compile(optimizer=keras.optimizers.SGD(0.5))
    generator_table = model.generator.embeddings.token_embedding.embeddings
    delta = model.backbone.embeddings.token_embedding.embeddings
    before_table, before_delta = _numpy(generator_table), _numpy(delta)
    logs = model.train_on_batch(x, labels, return_dict=True)
    assert logs["rtd_loss"] > 0
    # The replaced-token loss alone (mlm weight 0) moved the delta, not the generator's table.
    np.testing.assert_array_equal(_numpy(generator_table), before_table)
    assert not np.allclose(_numpy(delta), before_delta)

    model = DebertaV3RtdPretrainer(DebertaV3Backbone(**DEBERTA), seed=3)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    first = model.evaluate(x, labels, return_dict=True, verbose=0)
    for _ in range(6):
        model.train_on_batch(x, labels)
    last = model.evaluate(x, labels, return_dict=True, verbose=0)
    assert last["loss"] < first["loss"], (first, last)
    assert {"mlm_loss", "mlm_accuracy", "rtd_loss", "rtd_accuracy"} <= set(last)


@pytest.mark.slow
def test_discriminator_is_the_shared_table_plus_the_delta(tmp_path):
    model = DebertaV3RtdPretrainer(DebertaV3Backbone(**DEBERTA), seed=1)
    _family_checks.randomize(model, seed=5)
    x, _ = _batch(model)
    features = {k: x[k] for k in ("token_ids", "padding_mask")}
    discriminator = model.discriminator()
    assert discriminator.embeddings.shared is None
    np.testing.assert_allclose(
        _family_checks.numpy_outputs(discriminator, features)["sequence_output"],
        _family_checks.numpy_outputs(model.backbone, features)["sequence_output"],
        atol=1e-5, rtol=0)
    # The stand-alone discriminator saves and converts like any backbone.
    kbert.convert.save_hugging_face(discriminator, tmp_path / "hf")
    again = kbert.convert.load(tmp_path / "hf")
    np.testing.assert_allclose(_family_checks.numpy_outputs(again, features)["sequence_output"],
                               _family_checks.numpy_outputs(discriminator,
                                                            features)["sequence_output"],
                               atol=1e-5, rtol=0)


@pytest.mark.slow
def test_keras_round_trip(tmp_path):
    model = DebertaV3RtdPretrainer(DebertaV3Backbone(**DEBERTA), seed=1)
    _family_checks.randomize(model, seed=2)
    path = str(tmp_path / "rtd.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert type(restored) is DebertaV3RtdPretrainer
    x, _ = _batch(model)
    # The link survives: the restored discriminator reads the generator's table + delta.
    assert restored.backbone.embeddings.shared is restored.generator.token_embedding
    a, b = model(x), restored(x)
    for key in ("mlm_logits", "rtd_logits"):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(b[key]),
                                   keras.ops.convert_to_numpy(a[key]), atol=1e-6, rtol=0)
