"""Layer-wise learning-rate decay, a frozen backbone and gradual unfreezing, on a tiny model."""

import keras
import numpy as np
import pytest

from kbert import models
from kbert.training import layer_wise
from kbert.models.optimizers import create_optimizer

CONFIG = dict(vocabulary_size=50, num_layers=3, hidden_size=16, num_heads=2,
              intermediate_size=32, max_sequence_length=16, dropout=0.0,
              attention_dropout=0.0)


class Tagger(keras.Model):
    """A backbone with a dense head: the shape of a kbert task model."""

    def __init__(self, backbone):
        inputs = dict(backbone.input)
        logits = keras.layers.Dense(3, name="head")(backbone(inputs)["sequence_output"])
        super().__init__(inputs=inputs, outputs=logits)
        self.backbone = backbone


def tagger(family="bert", **overrides):
    config = models.FAMILIES[family].config(**{**CONFIG, **overrides})
    return Tagger(models.build(family, config, head=None))


def batch(n=8, seq=8):
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(5, 50, (n, seq)).astype("int32"),
         "segment_ids": np.zeros((n, seq), "int32"), "padding_mask": np.ones((n, seq), "int32")}
    return x, rng.integers(0, 3, (n, seq)).astype("int32")


def test_multipliers_decay_from_the_head_down():
    model = tagger()
    rates = layer_wise.learning_rate_multipliers(model, 0.5)
    by_layer = {}
    for path, rate in rates.items():
        by_layer.setdefault(path.split("/")[0], set()).add(rate)
    assert by_layer == {"embeddings": {0.5 ** 4}, "transformer_layer_0": {0.5 ** 3},
                        "transformer_layer_1": {0.5 ** 2}, "transformer_layer_2": {0.5},
                        "pooler": {1.0}}
    assert not any(path.startswith("head") for path in rates)  # the head: the base rate
    with pytest.raises(ValueError, match=r"decay must be in \(0, 1\], got 1.5"):
        layer_wise.learning_rate_multipliers(model, 1.5)


def test_albert_shared_blocks_take_their_top_layer():
    model = tagger("albert", num_layers=4, num_groups=2, embedding_size=8)
    depths = {layer.name: depth for layer, depth in layer_wise.depths(model)}
    assert depths == {"embeddings": 0, "transformer_layer_0": 2, "transformer_layer_1": 4,
                      "pooler": 5}


def first_step(rates):
    """How far each variable moves in one AdamW step from the same start, with `rates`."""
    keras.utils.set_random_seed(3)
    model = tagger()
    optimizer = create_optimizer("adamw", learning_rate=1e-3, total_steps=10, decay="constant",
                                 weight_decay=0.0, clipnorm=None,
                                 learning_rate_multipliers=rates and rates(model))
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    before = {v.path: keras.ops.convert_to_numpy(v).copy() for v in model.trainable_variables}
    model.train_on_batch(*batch())
    return {v.path: keras.ops.convert_to_numpy(v) - before[v.path]
            for v in model.trainable_variables}


@pytest.mark.slow
def test_each_variable_moves_by_its_layer_rate():
    """The same first step with and without the multipliers: every variable's move is scaled
    by exactly its factor (AdamW's step is linear in the learning rate)."""
    plain = first_step(None)
    decayed = first_step(lambda model: layer_wise.learning_rate_multipliers(model, 0.5))
    factors = layer_wise.learning_rate_multipliers(tagger(), 0.5)
    checked = set()
    for path, step in plain.items():
        factor = factors.get(path, 1.0)
        np.testing.assert_allclose(decayed[path], factor * step, rtol=1e-4, atol=2.5e-7,  # float32 rounding of values up to ~1
                                   err_msg=path)
        if np.abs(step).max() > 0:
            checked.add(factor)
    assert checked == {0.5 ** 4, 0.5 ** 3, 0.5 ** 2, 0.5, 1.0}


def test_the_multipliers_survive_serialization():
    rates = layer_wise.learning_rate_multipliers(tagger(), 0.8)
    optimizer = create_optimizer("lamb", total_steps=10, learning_rate_multipliers=rates)
    back = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert type(back).__name__ == "Lamb" and back.learning_rate_multipliers == rates


@pytest.mark.slow
def test_frozen_layers_do_not_change_and_unfreezing_follows_the_schedule():
    model = tagger()
    optimizer = create_optimizer("adamw", learning_rate=1e-2, total_steps=100, clipnorm=None)
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    optimizer.build(model.trainable_variables)  # every variable, before any freezing

    def snapshot():
        return {layer.name: [keras.ops.convert_to_numpy(w).copy() for w in layer.weights]
                for layer, _ in layer_wise.depths(model)}

    def changed(a, b):
        return {name for name in a if any(not np.array_equal(x, y)
                                          for x, y in zip(a[name], b[name]))}

    x, y = batch()
    data = [(x, y)] * 6
    callback = layer_wise.GradualUnfreezing(every=2, verbose=False)
    seen = []

    class Watch(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.before = snapshot()

        def on_train_batch_end(self, batch, logs=None):
            seen.append(changed(self.before, snapshot()))

    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensors((x, y)).repeat(len(data))
    model.fit(dataset, epochs=1, callbacks=[callback, Watch()], verbose=0)
    # Steps 0-1: the backbone frozen; 2-3: the top depth (the pooler, which a tagger does not
    # use, so nothing moves); 4-5: the pooler and the top transformer layer.
    assert seen == [set(), set(), set(), set(), {"transformer_layer_2"}, {"transformer_layer_2"}]
    trainable = {layer.name: layer.trainable for layer, _ in layer_wise.depths(model)}
    assert trainable == {"embeddings": False, "transformer_layer_0": False,
                         "transformer_layer_1": False, "transformer_layer_2": True,
                         "pooler": True}
    assert layer_wise.set_trainable_layers(model, None) == 5  # all of it again
    assert all(layer.trainable for layer, _ in layer_wise.depths(model))
