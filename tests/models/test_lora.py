"""LoRA on every family's backbone (`kbert.models.lora`, Keras' `enable_lora`): adapters on
the attention's projections, the rest frozen; unchanged outputs until trained; folded into the
kernels for export; saved and reloaded; and a tools/finetune.py run with --lora_rank."""

import keras
import numpy as np
import pytest

from kbert import models
from kbert.models import lora
from tests.helpers import TINY, random_batch
from tests.tools.test_finetune import run, sentences, write_csv

EXTRA = {"albert": dict(embedding_size=16), "electra": dict(embedding_size=16),
         "mobile_bert": dict(embedding_size=16, intra_bottleneck_size=16)}


def _backbone(family):
    config = {**TINY, **EXTRA.get(family, {})}
    return models.build(family, config, head=None)


@pytest.mark.parametrize("family", list(models.FAMILIES))
def test_adapters_train_alone_and_fold_into_the_kernels(family, tmp_path):
    backbone = _backbone(family)
    features, _ = random_batch(vocab=TINY["vocabulary_size"])
    batch = {k: v for k, v in features.items() if k in backbone.input}
    before = keras.ops.convert_to_numpy(backbone(batch)["sequence_output"])
    frozen = {v.path: v.numpy().copy() for v in backbone.weights}
    adapted = backbone.enable_lora(2)
    assert adapted and all(layer.name in lora.TARGETS for layer in adapted)
    trainable = {v.path for v in backbone.trainable_weights}
    assert trainable and all("lora" in p or p.endswith("bias") for p in trainable), trainable
    # B starts at zero: the adapted backbone computes what it did.
    np.testing.assert_allclose(backbone(batch)["sequence_output"], before, atol=1e-6)
    # A step trains the adapters only.
    head = keras.layers.Dense(1)
    optimizer = keras.optimizers.SGD(0.5)
    for _ in range(2):
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = keras.ops.mean(head(backbone(batch)["sequence_output"]) ** 2)
        variables = backbone.trainable_weights + head.trainable_weights
        optimizer.apply(tape.gradient(loss, variables), variables)
    after = keras.ops.convert_to_numpy(backbone(batch)["sequence_output"])
    assert all(np.abs(layer.lora_kernel_b.numpy()).max() > 0 for layer in adapted)
    assert np.abs(after - before).max() > 0
    for variable in backbone.weights:
        if variable.path in frozen and variable.path not in trainable:
            np.testing.assert_array_equal(variable.numpy(), frozen[variable.path], variable.path)
    path = tmp_path / "lora.keras"
    backbone.save(path)
    again = keras.saving.load_model(path)
    np.testing.assert_allclose(again(batch)["sequence_output"], after, atol=1e-5)
    assert lora.merge_lora(backbone) == len(adapted)
    np.testing.assert_allclose(backbone(batch)["sequence_output"], after, atol=1e-5)


def test_bad_settings_say_what_is_allowed():
    backbone = _backbone("bert")
    with pytest.raises(ValueError, match="rank"):
        backbone.enable_lora(0)
    with pytest.raises(ValueError, match="its dense layers are .*qkv_dense"):
        backbone.enable_lora(2, targets=("nonsense",))
    backbone.enable_lora(2)
    with pytest.raises(ValueError, match="already enabled"):
        backbone.enable_lora(2)


@pytest.mark.slow
def test_a_fine_tuning_run_with_lora_saves_and_exports(tmp_path):
    import tensorflow as tf

    from kbert.untrusted import load_model

    train = write_csv(tmp_path / "train.csv", sentences(32, 0))
    run(tmp_path, train_data=train, epochs=1, lora_rank=2, export_dir=str(tmp_path / "export"))
    model = load_model(str(tmp_path / "run" / "model.keras"))  # Keras folds the adapters in
    assert model.label_names == ["no", "yes"]
    served = tf.saved_model.load(str(tmp_path / "export"))
    answer = served.signatures["serving_default"](text=tf.constant(["a short sentence"]))
    assert answer["logits"].shape == (1, 2)
