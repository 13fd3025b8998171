import keras
import numpy as np
import pytest

from kbert.models import BertBackbone
from kbert.training import WarmupSchedule, create_optimizer
from tests.helpers import TINY, decayed_paths


def values(schedule, steps):
    return [float(keras.ops.convert_to_numpy(schedule(s))) for s in steps]


def test_warmup_then_linear_decay():
    schedule = WarmupSchedule(1e-3, warmup_steps=10, total_steps=110)
    got = values(schedule, [0, 5, 10, 60, 110, 200])
    np.testing.assert_allclose(got, [0, 5e-4, 1e-3, 5e-4, 0, 0], atol=1e-9)


def test_polynomial_and_constant():
    poly = WarmupSchedule(1e-3, 0, 100, decay="polynomial", power=0.5, end_learning_rate=1e-5)
    np.testing.assert_allclose(values(poly, [75]), [(1e-3 - 1e-5) * 0.5 + 1e-5], rtol=1e-6)
    const = WarmupSchedule(2e-3, 4, 100, decay="constant")
    np.testing.assert_allclose(values(const, [2, 50, 99]), [1e-3, 2e-3, 2e-3], rtol=1e-6)


def test_schedule_round_trip():
    schedule = WarmupSchedule(1e-3, 10, 100, decay="polynomial", power=2.0)
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert values(again, [3, 40]) == values(schedule, [3, 40])


def test_errors():
    with pytest.raises(ValueError, match="Unknown decay 'cosine'. Allowed: linear, polynomial"):
        WarmupSchedule(1e-3, 0, 10, decay="cosine")
    with pytest.raises(ValueError, match="warmup_steps=20, total_steps=10"):
        WarmupSchedule(1e-3, 20, 10)
    with pytest.raises(ValueError, match="Unknown optimizer 'sgd'. Allowed: adamw, lamb"):
        create_optimizer("sgd")
    with pytest.raises(ValueError, match="gradient_accumulation_steps must be an integer >= 1"):
        create_optimizer(gradient_accumulation_steps=0)


def randomized(variables):
    """No zeros (biases and beta start at 0, where decay would change nothing)."""
    rng = np.random.default_rng(0)
    for v in variables:
        v.assign(rng.uniform(0.5, 1.5, v.shape).astype("float32"))
    return variables


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_weight_decay_skips_layer_norm_and_bias(name):
    """One step of zero gradients moves only what weight decay touches: every kernel and
    embedding table of a BERT backbone shrinks by lr * weight_decay, and no LayerNorm gamma
    or beta and no bias moves."""
    variables = randomized(BertBackbone(**TINY).trainable_variables)
    optimizer = create_optimizer(name, learning_rate=0.1, total_steps=10, weight_decay=0.1)
    assert isinstance(optimizer, keras.optimizers.AdamW if name == "adamw" else keras.optimizers.Lamb)
    spared = {v.path for v in variables if v.path.rsplit("/", 1)[-1] in ("gamma", "beta", "bias")}
    assert len(spared) == 19 and len(variables) == 31  # 5 LayerNorms, 9 dense biases
    before = [keras.ops.convert_to_numpy(v).copy() for v in variables]
    optimizer.apply([keras.ops.zeros_like(v) for v in variables], variables)
    for v, old in zip(variables, before):
        new = keras.ops.convert_to_numpy(v)
        if v.path in spared:
            np.testing.assert_array_equal(new, old, err_msg=v.path)
        else:  # decoupled decay at the step's learning rate (0.1, no warm-up): x 0.99
            np.testing.assert_allclose(new, old * (1 - 0.1 * 0.1), rtol=1e-6, err_msg=v.path)
    assert decayed_paths(optimizer, variables) == {v.path for v in variables} - spared


@pytest.mark.parametrize("name", ["adamw", "lamb"])
@pytest.mark.parametrize("weight_decay", [0, 0.0, None])
def test_no_weight_decay(name, weight_decay):
    variables = randomized(BertBackbone(**TINY).trainable_variables)
    optimizer = create_optimizer(name, learning_rate=0.1, total_steps=10,
                                 weight_decay=weight_decay)
    assert decayed_paths(optimizer, variables) == set()


def apply(optimizer, variable, gradient):
    optimizer.apply([keras.ops.convert_to_tensor(gradient)], [variable])
    return keras.ops.convert_to_numpy(variable).copy()


def clip(gradient, norm):
    return gradient * min(1.0, norm / np.linalg.norm(gradient))


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_gradient_accumulation_and_clipping(name):
    """With 2 accumulation steps and clipnorm 0.5, the weights move once every 2 steps, by
    the update of a plain optimizer given the mean gradient clipped to norm 0.5."""
    settings = dict(learning_rate=0.1, decay="constant", total_steps=10, weight_decay=0)
    optimizer = create_optimizer(name, gradient_accumulation_steps=2, clipnorm=0.5, **settings)
    reference = create_optimizer(name, clipnorm=None, **settings)
    rng = np.random.default_rng(0)
    start = rng.normal(size=6).astype("float32")
    ours, theirs = keras.Variable(start, name="w"), keras.Variable(start, name="w")
    # Big gradients (norm ~10) in different directions: their mean has norm > 0.5, and
    # clipping each before averaging would give another direction. Then small ones whose
    # mean (norm 0.3) is not clipped (their sum, norm 0.6, would be).
    big = [rng.normal(size=6).astype("float32") * 4 for _ in range(2)]
    small = [np.array([0.4, 0, 0.1, 0, 0, 0], "float32"),
             np.array([0, -0.4, 0.1, 0, 0, 0], "float32")]
    mean_big, mean_small = np.mean(big, axis=0), np.mean(small, axis=0)
    assert np.linalg.norm(mean_big) > 1.0 and np.linalg.norm(mean_small) < 0.5
    np.testing.assert_array_equal(apply(optimizer, ours, big[0]), start)  # accumulated only
    expected = apply(reference, theirs, clip(mean_big, 0.5))
    np.testing.assert_allclose(apply(optimizer, ours, big[1]), expected, rtol=1e-5, atol=1e-7)
    assert not np.allclose(expected, start)
    np.testing.assert_array_equal(apply(optimizer, ours, small[0]), expected)
    # The second update depends on the size of the first gradient (Adam's moments), so an
    # unclipped first step would show here.
    expected = apply(reference, theirs, mean_small)
    np.testing.assert_allclose(apply(optimizer, ours, small[1]), expected, rtol=1e-5, atol=1e-7)
    assert int(optimizer.iterations) == 2  # updates (4 batches)
    assert optimizer.gradient_accumulation_steps == 2 and optimizer.global_clipnorm == 0.5


def numpy_lamb(weights, gradients, steps, learning_rate, weight_decay, decayed, clipnorm,
               beta_1=0.9, beta_2=0.999, epsilon=1e-6):
    """LAMB in numpy (You et al. 2019, Algorithm 2: Adam's moments with bias correction, then
    each tensor's step scaled by the trust ratio |w| / |update|, 1 where either is 0), after
    clipping the global gradient norm to `clipnorm`. `learning_rate(step)` is the schedule.
    Weight decay is Keras's, decoupled: `w -= w * weight_decay * lr` before the step, for the
    tensors in `decayed` (the paper adds `weight_decay * w` inside the trust ratio instead;
    with weight_decay=0 both are the paper's LAMB)."""
    w = [x.astype("float64") for x in weights]
    m = [np.zeros_like(x) for x in w]
    v = [np.zeros_like(x) for x in w]
    for t in range(1, steps + 1):
        g = [x.astype("float64") for x in gradients[t - 1]]
        norm = np.sqrt(sum(np.sum(x * x) for x in g))
        g = [x * min(1.0, clipnorm / norm) for x in g]
        lr = learning_rate(t - 1)
        for i in range(len(w)):
            if decayed[i]:
                w[i] = w[i] - w[i] * weight_decay * lr
            m[i] = beta_1 * m[i] + (1 - beta_1) * g[i]
            v[i] = beta_2 * v[i] + (1 - beta_2) * g[i] ** 2
            update = (m[i] / (1 - beta_1**t)) / (np.sqrt(v[i] / (1 - beta_2**t)) + epsilon)
            w_norm, u_norm = np.linalg.norm(w[i]), np.linalg.norm(update)
            ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
            w[i] = w[i] - ratio * lr * update
    return w


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_lamb_steps_match_a_numpy_reference(weight_decay):
    """Four LAMB steps of kbert's optimizer (warm-up then linear decay, clipping, decay that
    spares the bias) on a kernel, a bias that starts at zero (trust ratio 1) and a table give
    numpy's weights to 1e-6."""
    rng = np.random.default_rng(3)
    shapes = {"kernel": (6, 4), "bias": (4,), "embeddings": (5, 6)}
    start = {n: rng.normal(size=s).astype("float32") for n, s in shapes.items()}
    start["bias"][:] = 0.0
    variables = [keras.Variable(start[n], name=n) for n in shapes]
    gradients = [[rng.normal(scale=s, size=shapes[n]).astype("float32") for n in shapes]
                 for s in (3.0, 0.1, 1.0, 0.05)]  # big ones are clipped, small ones not
    optimizer = create_optimizer("lamb", learning_rate=0.05, warmup_steps=2, total_steps=8,
                                 weight_decay=weight_decay, clipnorm=1.0)
    for step in gradients:
        optimizer.apply([keras.ops.convert_to_tensor(g) for g in step], variables)
    schedule = WarmupSchedule(0.05, 2, 8)  # create_optimizer's
    expected = numpy_lamb([start[n] for n in shapes], gradients, 4,
                          lambda s: float(keras.ops.convert_to_numpy(schedule(s))),
                          weight_decay, [n != "bias" for n in shapes], clipnorm=1.0)
    assert float(keras.ops.convert_to_numpy(schedule(0))) == 0.0  # the first step: warm-up
    for variable, want, name in zip(variables, expected, shapes):
        got = keras.ops.convert_to_numpy(variable)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=name)
        assert not np.allclose(got, start[name]), name


@pytest.mark.slow
def test_lamb_trains_a_bert_classifier():
    """A tiny BERT with a classifier on a task it can learn (is token 7 in the sequence?):
    LAMB brings the loss from chance (0.69) to under a third of it in 60 steps."""
    backbone = BertBackbone(**TINY, dropout=0.0, attention_dropout=0.0)
    inputs = {k: keras.Input((16,), dtype="int32", name=k)
              for k in ("token_ids", "segment_ids", "padding_mask")}
    logits = keras.layers.Dense(2)(backbone(inputs)["pooled_output"])
    model = keras.Model(inputs, logits)
    model.compile(optimizer=create_optimizer("lamb", learning_rate=0.05, warmup_steps=4,
                                             total_steps=60, weight_decay=0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    ids = rng.integers(8, 97, (64, 16)).astype("int32")
    labels = rng.integers(0, 2, 64).astype("int32")
    ids[labels == 1, rng.integers(0, 16, int(labels.sum()))] = 7
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    history = model.fit(x, labels, batch_size=16, epochs=15, verbose=0, shuffle=False)
    losses = history.history["loss"]
    assert losses[0] > 0.6 and losses[-1] < losses[0] / 3, losses


def test_the_runs_adam_settings_reach_the_optimizer_and_bad_ones_fail_fast(tmp_path):
    """--adam_beta_2 and --adam_epsilon (RoBERTa's 0.98; transformers' Trainer's 1e-8) are the
    optimizer's; out of range, the run stops before any work naming the flag."""
    from kbert.training import PretrainingConfig
    from kbert.training.config_fields import ConfigError

    config = PretrainingConfig(model_dir=str(tmp_path), adam_beta_2=0.98, adam_epsilon=1e-8)
    config.validate()
    optimizer = config.create_optimizer(total_steps=10, warmup_steps=0)
    assert (optimizer.beta_2, optimizer.epsilon) == (0.98, 1e-8)
    default = PretrainingConfig(model_dir=str(tmp_path)).create_optimizer(10, 0)
    assert (default.beta_2, default.epsilon) == (0.999, 1e-6)  # BERT's
    for field, value, message in (("adam_beta_2", 1.0, "--adam_beta_2 must be a number in "
                                   "(0, 1), got 1.0."),
                                  ("adam_epsilon", 0.0, "--adam_epsilon must be a number > 0, "
                                   "got 0.0.")):
        with pytest.raises(ConfigError) as error:
            PretrainingConfig(model_dir=str(tmp_path), **{field: value}).validate()
        assert str(error.value) == message


@pytest.mark.parametrize("in_graph", [False, True])
def test_adamw_on_tensorflow_steps_as_keras_adamw(in_graph):
    """kbert's AdamW updates through TensorFlow's fused Adam kernel (`_FusedAdamStep`):
    five steps (warm-up then decay, decay sparing the bias, a variable at half the rate)
    give what `keras.optimizers.AdamW`'s own element-wise update gives, to float32 rounding
    (1e-6). A table's gradient as IndexedSlices with a row twice (a token twice in a batch)
    is the summed dense gradient, as Keras's update of that dense gradient (Keras's own
    update of the slices squares each before summing them: not Adam's second moment)."""
    import tensorflow as tf

    from kbert.models.optimizers import _FusedAdamStep

    rng = np.random.default_rng(5)
    shapes = {"kernel": (6, 4), "bias": (4,), "embeddings": (9, 3)}
    start = {n: rng.normal(size=s).astype("float32") for n, s in shapes.items()}
    steps = [[rng.normal(scale=s, size=shapes[n]).astype("float32") for n in shapes]
             for s in (0.3, 1.0, 0.05, 2.0, 0.5)]

    def run(optimizer, dense):
        variables = [keras.Variable(start[n], name=n) for n in shapes]

        def apply(grads):
            table = tf.IndexedSlices(tf.gather(grads[2], [1, 4, 4]), tf.constant([1, 4, 4]),
                                     tf.constant(shapes["embeddings"]))
            optimizer.apply([grads[0], grads[1],
                             tf.convert_to_tensor(table) if dense else table], variables)

        apply_ = tf.function(apply) if in_graph else apply
        for grads in steps:
            apply_([tf.constant(g) for g in grads])
        return [keras.ops.convert_to_numpy(v) for v in variables]

    kbert_adamw = create_optimizer("adamw", learning_rate=0.05, warmup_steps=2,
                                   total_steps=8, weight_decay=0.1, clipnorm=None,
                                   learning_rate_multipliers={"kernel": 0.5})
    assert isinstance(kbert_adamw, _FusedAdamStep)
    reference = create_optimizer("adamw", learning_rate=0.05, warmup_steps=2, total_steps=8,
                                 weight_decay=0.1, clipnorm=None,
                                 learning_rate_multipliers={"kernel": 0.5})
    reference._fused = lambda variable: False  # Keras's own update
    got, want = run(kbert_adamw, dense=False), run(reference, dense=True)
    for g, w, name in zip(got, want, shapes):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, err_msg=name)
        assert not np.allclose(g, start[name]), name
