"""Early exit (`kbert.tasks.text_classification.early_exit`, `kbert.training.early_exit`):
entropy 0 never exits and is the full model on every family; a row exits where it would
alone and answers the same; `simulate` (NumPy, on every exit's logits) takes the exits the
graph takes; the exit heads train with the backbone and classifier frozen; the pipeline and
the SavedModel exported with `early_exit` answer as `exit_early`; bad settings are refused
by name."""

from pathlib import Path

import keras
import numpy as np
import pytest

import kbert
from kbert.tasks import EarlyExitClassifier, TextClassifier
from kbert.tasks.text_classification.early_exit import check_exit
from kbert.training import early_exit
from tests.tasks._checks import FAMILIES, inputs_for, tiny_backbone

TASKS = Path(__file__).parents[1] / "fixtures" / "hf_tasks"
TEXTS = ["a good day", "the worst film ever made", "fine", "not bad at all, really",
         "what a waste of an evening", "I liked it", "so so", "it was the best of times"]
LABELS = ["POSITIVE", "NEGATIVE", "NEUTRAL", "POSITIVE", "NEGATIVE", "POSITIVE", "NEUTRAL",
          "POSITIVE"]


def _spread(model, seed=0):
    """Exit heads whose softmaxes range from sure to unsure, as trained ones do (random
    small weights give every row an entropy within 1e-5 of ln N: thresholds between them
    would test float rounding)."""
    rng = np.random.default_rng(seed)
    for head in model.exit_heads:
        head.classifier.kernel.assign(rng.normal(0, 2.0, head.classifier.kernel.shape))
    return model


def _threshold(model, x):
    """An entropy threshold in the widest gap between the rows' entropies at the first exit:
    some rows exit there, the others go on, and no row is within float rounding of it."""
    logits = keras.ops.convert_to_numpy(model.exits_model()(x))[:, 0]
    values = np.sort(early_exit._entropy(logits))
    gap = np.argmax(np.diff(values))
    assert values[gap + 1] - values[gap] > 1e-4
    return float(values[gap] + values[gap + 1]) / 2


@pytest.mark.parametrize("family", FAMILIES)
def test_entropy_zero_never_exits_and_is_the_full_model(family):
    keras.utils.set_random_seed(0)
    model = EarlyExitClassifier(tiny_backbone(family, num_layers=3), num_classes=3)
    x = inputs_for(model)
    out = model.exit_early(x, entropy=0.0)
    full = keras.ops.convert_to_numpy(model(x, training=False))
    np.testing.assert_allclose(out["logits"], full, atol=1e-5, rtol=0)
    assert keras.ops.convert_to_numpy(out["exit_layer"]).tolist() == [3] * len(full)
    stacked = keras.ops.convert_to_numpy(model.exits_model()(x))
    assert stacked.shape == (len(full), 3, 3)  # exits after layers 1 and 2, the classifier
    np.testing.assert_allclose(stacked[:, -1], full, atol=1e-5, rtol=0)


@pytest.mark.parametrize("family", ["bert", "modern_bert", "deberta_v3"])
def test_a_row_exits_where_it_would_alone(family):
    keras.utils.set_random_seed(1)
    model = _spread(EarlyExitClassifier(tiny_backbone(family, num_layers=4), num_classes=3))
    x = inputs_for(model, seed=3)
    threshold = _threshold(model, x)
    stacked = keras.ops.convert_to_numpy(model.exits_model()(x))
    for setting in ({"entropy": threshold}, {"patience": 1}):
        out = model.exit_early(x, **setting)
        layers = keras.ops.convert_to_numpy(out["exit_layer"])
        logits = keras.ops.convert_to_numpy(out["logits"])
        predicted, expected = early_exit.simulate(stacked, model.exit_layers, 4, **setting)
        np.testing.assert_array_equal(layers, expected)
        np.testing.assert_array_equal(logits.argmax(-1), predicted)
        # each row's answer is its exit's logits
        at = np.searchsorted(model.exit_layers + [4], layers)
        np.testing.assert_allclose(logits, stacked[np.arange(len(x["token_ids"])), at],
                                   atol=1e-5, rtol=0)
        for row in range(len(layers)):
            alone = model.exit_early({k: v[row:row + 1] for k, v in x.items()}, **setting)
            assert int(keras.ops.convert_to_numpy(alone["exit_layer"])[0]) == layers[row]
            np.testing.assert_allclose(keras.ops.convert_to_numpy(alone["logits"])[0],
                                       logits[row], atol=1e-5, rtol=0)
    entropy_layers = keras.ops.convert_to_numpy(
        model.exit_early(x, entropy=threshold)["exit_layer"])
    assert len(set(entropy_layers.tolist())) > 1  # the threshold splits the rows


def test_simulate_counts_exits_as_by_hand():
    sure, unsure = [9.0, 0.0, 0.0], [0.1, 0.0, 0.0]
    other = [0.0, 9.0, 0.0]
    # rows x (exits after layers 1, 2, 3, then the classifier at layer 4)
    logits = np.array([[sure, sure, sure, sure],            # sure at once
                       [unsure, unsure, sure, other],       # sure at the third exit
                       [unsure, unsure, unsure, other],     # never sure: the classifier
                       [unsure, other, unsure, other]])     # its exits never agree
    predicted, layers = early_exit.simulate(logits, [1, 2, 3], 4, entropy=0.5)
    assert layers.tolist() == [1, 3, 4, 2] and predicted.tolist() == [0, 0, 1, 1]
    # patience 2: the same class at three exits in a row (PABEE's counter reaching 2)
    predicted, layers = early_exit.simulate(logits, [1, 2, 3], 4, patience=2)
    assert layers.tolist() == [3, 3, 3, 4] and predicted.tolist() == [0, 0, 0, 1]
    predicted, layers = early_exit.simulate(logits, [1, 2, 3], 4, patience=1)
    assert layers.tolist() == [2, 2, 2, 4] and predicted.tolist() == [0, 0, 0, 1]


def _classifier():
    """A 4-layer BERT classifier with the fixture's tokenizer and labels (3 classes)."""
    keras.utils.set_random_seed(2)
    fixture = kbert.load(str(TASKS / "bert_seq_single"), task="text-classification").model
    config = fixture.backbone.config.replace(num_layers=4)
    backbone = kbert.models.BertBackbone.from_config(config)
    return TextClassifier(backbone, label_names=fixture.label_names,
                          preprocessor=fixture.preprocessor)


def test_trained_exits_the_pipeline_and_the_saved_model_answer_alike(tmp_path):
    import tensorflow as tf

    classifier = _classifier()
    model = early_exit.add_exits(classifier, exit_layers=[1, 2])
    features = model.preprocessor.encode(TEXTS).features
    x = {name: features[name] for name in model.input}
    np.testing.assert_allclose(model.predict(x, verbose=0), classifier.predict(x, verbose=0),
                               atol=1e-6)
    frozen = [w.numpy().copy() for w in classifier.weights]
    before = [w.numpy().copy() for head in model.exit_heads for w in head.weights]
    history = early_exit.train_exits(model, TEXTS, LABELS, epochs=2, batch_size=4,
                                     learning_rate=1e-2, validation_data=(TEXTS, LABELS),
                                     verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert len(history.history["val_accuracy"]) == 2
    for want, got in zip(frozen, classifier.weights):  # backbone and classifier untouched
        np.testing.assert_array_equal(want, got.numpy())
    after = [w.numpy() for head in model.exit_heads for w in head.weights]
    assert any(not np.array_equal(b, a) for b, a in zip(before, after))
    assert model.backbone.trainable

    choice = early_exit.choose(model, TEXTS, LABELS, max_drop=0.5)
    assert choice.curve[0][0] == 0.0 and choice.curve[0][2] == 4.0
    assert choice.accuracy >= choice.full_accuracy - 0.5
    assert choice.mean_layers <= 4.0

    _spread(model)
    threshold = _threshold(model, x)
    pipe = kbert.pipeline("text-classification", model=model)
    answers = pipe(TEXTS, early_exit={"entropy": threshold}, top_k=None)
    full = pipe(TEXTS, top_k=None)
    assert pipe(TEXTS, early_exit={"entropy": 0.0}, top_k=None) == full
    out = model.exit_early(x, entropy=threshold)
    scores = keras.ops.convert_to_numpy(keras.ops.softmax(out["logits"]))
    for answer, row in zip(answers, scores):
        got = {a["label"]: a["score"] for a in answer}
        np.testing.assert_allclose([got[n] for n in model.label_names], row, atol=1e-5)
    assert answers != full  # some rows answered at an exit

    path = pipe.export(str(tmp_path / "exits"), early_exit={"entropy": threshold})
    served = tf.saved_model.load(path).signatures["serving_default"](tf.constant(TEXTS))
    best = [max(a, key=lambda item: item["score"]) for a in answers]
    assert [label.decode() for label in served["label"].numpy()[:, 0]] == \
        [a["label"] for a in best]
    np.testing.assert_allclose(served["score"].numpy()[:, 0], [a["score"] for a in best],
                               atol=1e-5)


def test_joint_training_moves_the_backbone_and_reads_a_dataset():
    import tensorflow as tf

    keras.utils.set_random_seed(4)
    model = EarlyExitClassifier(tiny_backbone("bert", num_layers=3), num_classes=3)
    x = inputs_for(model)
    data = tf.data.Dataset.from_tensor_slices((x, np.array([0, 1, 2, 1]))).batch(2)
    table = model.backbone.token_embedding.embeddings
    before = table.numpy().copy()
    history = early_exit.train_exits(model, data, epochs=2, learning_rate=1e-2, joint=True,
                                     verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert not np.allclose(before, table.numpy())
    with pytest.raises(ValueError, match="has none: give a tf.data dataset"):
        early_exit.train_exits(model, x, np.array([0, 1, 2, 1]), joint=True, verbose=0)
    with pytest.raises(ValueError, match="needs labels"):
        early_exit.train_exits(model, x, joint=True, verbose=0)
    with pytest.raises(ValueError, match="needs labels with distill=0.5"):
        early_exit.train_exits(model, x, distill=0.5, verbose=0)
    with pytest.raises(ValueError, match=r"distill=0\.5 takes frozen training"):
        early_exit.train_exits(model, data, joint=True, distill=0.5, verbose=0)
    for value in (1.5, -0.1, True):
        with pytest.raises(ValueError, match=rf"distill={value!r}: .* in \[0, 1\]"):
            early_exit.train_exits(model, data, distill=value, verbose=0)
    with pytest.raises(ValueError, match="temperature=0"):
        early_exit.train_exits(model, data, temperature=0, verbose=0)
    with pytest.raises(ValueError, match="learning_rate=0"):
        early_exit.train_exits(model, data, learning_rate=0, verbose=0)
    with pytest.raises(ValueError, match="epochs"):
        early_exit.train_exits(model, data, epochs=0, verbose=0)


@pytest.mark.parametrize("family", ["bert", "modern_bert"])
def test_frozen_training_reads_what_the_exits_read_and_learns_the_classifier(family):
    """What frozen training computes once (each exit's pooled input, the classifier's
    logits) through the heads after their pooling is `exits_model`'s answer; distilled from
    the classifier (no labels needed), the exits come to answer as it does; the loss is the
    KL divergence by hand."""
    from kbert.training import exit_training

    keras.utils.set_random_seed(7)
    model = EarlyExitClassifier(tiny_backbone(family, num_layers=3), num_classes=3,
                                exit_dropout=0.0)  # (the loss by hand below has none)
    _spread(model)  # a classifier the exits do not already agree with
    model.classifier.kernel.assign(np.random.default_rng(1).normal(
        0, 3.0, model.classifier.kernel.shape))
    x = inputs_for(model)
    pooled, final, labels = exit_training.exit_features(model, x)
    assert labels is None and pooled.shape == (len(final), 2, model.backbone.config.hidden_size)
    # Exits that start out answering another class than the classifier's most frequent one.
    other = (np.bincount(final.argmax(-1), minlength=3).argmax() + 1) % 3
    for head in model.exit_heads:
        head.classifier.bias.assign(10.0 * np.eye(3)[other])
    pooled, final, labels = exit_training.exit_features(model, x)
    exits = keras.ops.convert_to_numpy(model.exits_model()(x))
    assert (exits[:, :-1].argmax(-1) != final.argmax(-1)[:, None]).any()
    np.testing.assert_allclose(final, exits[:, -1], atol=1e-5, rtol=0)
    heads = exit_training.PooledExits(model.exit_heads)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(heads(pooled)), exits[:, :-1],
                               atol=1e-5, rtol=0)

    history = early_exit.train_exits(model, x, epochs=60, batch_size=4, learning_rate=1e-2,
                                     temperature=2.0, verbose=0)
    assert "accuracy" not in history.history  # no labels: agreement alone
    assert history.history["agreement"][-1] == 1.0 > history.history["agreement"][0]
    after = keras.ops.convert_to_numpy(model.exits_model()(x))
    np.testing.assert_array_equal(after[:, :-1].argmax(-1),
                                  np.repeat(final.argmax(-1)[:, None], 2, 1))
    np.testing.assert_allclose(after[:, -1], final, atol=1e-5, rtol=0)  # the model as it was
    # The loss by hand: the KL divergence at temperature 2, times 4, averaged.
    p = np.exp(final / 2) / np.exp(final / 2).sum(-1, keepdims=True)
    q = np.exp(after[:, :-1] / 2) / np.exp(after[:, :-1] / 2).sum(-1, keepdims=True)
    by_hand = np.mean(4 * np.sum(p[:, None] * np.log(p[:, None] / q), -1))
    trainer_loss = early_exit.train_exits(model, x, epochs=1, batch_size=4,
                                          learning_rate=1e-12, temperature=2.0, verbose=0)
    np.testing.assert_allclose(trainer_loss.history["loss"][0], by_hand, rtol=1e-3)


@pytest.mark.parametrize("joint", [False, True])
def test_a_mixed_float16_model_trains_its_exits_with_loss_scaling(joint):
    """The trainer takes the backbone's policy (the global one here is float32), so that
    Keras scales the loss (float16 gradients underflow without it)."""
    import tensorflow as tf

    keras.utils.set_random_seed(5)
    model = EarlyExitClassifier(tiny_backbone("bert", dtype="mixed_float16", num_layers=3),
                                num_classes=3)
    assert keras.config.dtype_policy().name == "float32"
    data = tf.data.Dataset.from_tensor_slices((inputs_for(model),
                                               np.array([0, 1, 2, 1]))).batch(2)
    history = early_exit.train_exits(model, data, epochs=1, joint=joint, verbose=0)
    assert isinstance(history.model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert np.isfinite(history.history["loss"]).all()


def test_frozen_training_reads_a_labelled_dataset_and_refuses_what_it_cannot():
    """A dataset of (inputs, label names) batches half distilled, half on the labels; sample
    weights, a batch with the wrong number of labels, raw texts with no preprocessor and an
    odd validation tuple are refused by name."""
    import tensorflow as tf

    keras.utils.set_random_seed(8)
    model = EarlyExitClassifier(tiny_backbone("bert", num_layers=3),
                                label_names=["a", "b", "c"])
    x = inputs_for(model)
    names = np.array(["a", "c", "b", "a"])
    data = tf.data.Dataset.from_tensor_slices((x, names)).batch(2)
    history = early_exit.train_exits(model, data, epochs=2, learning_rate=1e-2, distill=0.5,
                                     validation_data=data, verbose=0)
    assert {"loss", "accuracy", "agreement", "val_accuracy"} <= set(history.history)
    from kbert.training import exit_training

    assert exit_training.exit_features(model, data)[2].tolist() == [0, 2, 1, 0]
    weighted = tf.data.Dataset.from_tensor_slices((x, names, np.ones(4))).batch(2)
    with pytest.raises(ValueError, match="have sample weights too"):
        early_exit.train_exits(model, weighted, verbose=0)
    one_hot = tf.data.Dataset.from_tensor_slices((x, np.eye(3)[[0, 2, 1, 0]])).batch(2)
    with pytest.raises(ValueError, match="A batch of 2 inputs has 6 labels"):
        early_exit.train_exits(model, one_hot, verbose=0)
    with pytest.raises(ValueError, match="has none: give a tf.data dataset"):
        early_exit.train_exits(model, ["a text", "another"], verbose=0)
    with pytest.raises(ValueError, match="got a tuple of 3"):
        early_exit.train_exits(model, data, validation_data=(x, names, names), verbose=0)
    with pytest.raises(ValueError, match="joint='yes': True or False"):
        early_exit.train_exits(model, data, joint="yes", verbose=0)
    with pytest.raises(ValueError, match="temperature=2.0 is the distillation's"):
        early_exit.train_exits(model, data, joint=True, temperature=2.0, verbose=0)


def test_frozen_training_leaves_a_lora_backbone_as_it_was():
    import tensorflow as tf

    keras.utils.set_random_seed(5)
    backbone = tiny_backbone("bert", num_layers=3)
    backbone.enable_lora(2)
    model = EarlyExitClassifier(backbone, num_classes=3)
    trainable = [w.path for w in model.trainable_weights]
    flags = [(layer.name, layer.trainable) for layer in backbone._flatten_layers()]
    # (the dropout layers' seed generators' states move on: not weights)
    weights = [w for w in backbone.weights if "seed_generator" not in w.path]
    values = [w.numpy().copy() for w in weights]
    x = inputs_for(model)
    data = tf.data.Dataset.from_tensor_slices((x, np.array([0, 1, 2, 1]))).batch(2)
    early_exit.train_exits(model, data, learning_rate=1e-2, verbose=0)
    assert [w.path for w in model.trainable_weights] == trainable
    assert [(layer.name, layer.trainable) for layer in backbone._flatten_layers()] == flags
    for want, got in zip(values, weights):
        np.testing.assert_array_equal(want, got.numpy(), err_msg=got.path)


def test_choose_takes_label_names_with_token_ids():
    keras.utils.set_random_seed(6)
    model = _spread(EarlyExitClassifier(tiny_backbone("bert", num_layers=3),
                                        label_names=["a", "b", "c"]))
    x = inputs_for(model)
    names = ["a", "c", "b", "a"]
    by_name = early_exit.choose(model, x, names, max_drop=0.0)
    by_id = early_exit.choose(model, x, np.array([[0], [2], [1], [0]]), max_drop=0.0)
    assert by_name == by_id
    full = np.mean(keras.ops.convert_to_numpy(model(x)).argmax(-1) == [0, 2, 1, 0])
    assert by_name.full_accuracy == full and by_name.accuracy >= full
    with pytest.raises(ValueError, match=r"label 1: unknown label 'd'; expected one of "
                                         r"\['a', 'b', 'c'\]"):
        early_exit.choose(model, x, ["a", "d", "b", "a"])
    with pytest.raises(ValueError, match="3 labels for 4 inputs"):
        early_exit.choose(model, x, [0, 1, 2])


def test_saved_reloaded_and_without_exits(tmp_path):
    keras.utils.set_random_seed(3)
    model = _spread(EarlyExitClassifier(tiny_backbone("bert", num_layers=3), num_classes=2,
                                        exit_layers=[2]))
    x = inputs_for(model)
    path = tmp_path / "exits.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is EarlyExitClassifier and loaded.exit_layers == [2]
    for setting in ({"entropy": 0.3}, {"patience": 1}):
        want, got = model.exit_early(x, **setting), loaded.exit_early(x, **setting)
        for key in want:
            np.testing.assert_allclose(keras.ops.convert_to_numpy(got[key]),
                                       keras.ops.convert_to_numpy(want[key]), atol=1e-6)
    alone = model.without_exits()
    assert type(alone) is TextClassifier
    np.testing.assert_allclose(keras.ops.convert_to_numpy(alone(x)),
                               keras.ops.convert_to_numpy(model(x)), atol=1e-6)
    with pytest.raises(ValueError, match=r"early-exit heads \(exit_layers=\[2\]\).*"
                                         "without_exits"):
        kbert.convert.save_hugging_face(model, str(tmp_path / "hf"))


def test_bad_settings_name_the_value():
    backbone = tiny_backbone("bert", num_layers=3)
    for layers, match in (([0], r"exit_layers has 0: exit heads go after layers 1 \.\. 2"),
                          ([3], "exit_layers has 3"), ([1, 1], r"each once"),
                          ("12", "a list of layers 1 .. 2")):
        with pytest.raises(ValueError, match=match):
            EarlyExitClassifier(backbone, num_classes=2, exit_layers=layers)
    with pytest.raises(ValueError, match="needs a backbone of 2 or more layers.*has 1"):
        EarlyExitClassifier(tiny_backbone("bert", num_layers=1), num_classes=2)
    with pytest.raises(ValueError, match="single-label classifier.*'regression'"):
        EarlyExitClassifier(backbone, problem_type="regression")
    model = EarlyExitClassifier(backbone, num_classes=2)
    x = inputs_for(model)
    for setting, match in (({"entropy": -1.0}, "early_exit entropy"),
                           ({"patience": 0}, "early_exit patience"),
                           ({}, "one of")):
        with pytest.raises(ValueError, match=match):
            model.exit_early(x, **setting)
    with pytest.raises(ValueError, match=r"early_exit=\{'speed': 1\}: a dict with one of"):
        check_exit({"speed": 1})
    with pytest.raises(ValueError, match="one of"):
        model.exit_early(x, entropy=0.1, patience=2)
    with pytest.raises(ValueError, match="max_drop=1.5"):
        early_exit.choose(model, x, [0, 1, 0, 1], max_drop=1.5)
    with pytest.raises(ValueError, match="has exit heads already"):
        early_exit.add_exits(model)


def test_the_pipeline_refuses_early_exit_it_cannot_run(tmp_path):
    pipe = kbert.pipeline("text-classification", model=str(TASKS / "bert_seq_single"))
    with pytest.raises(ValueError, match="EarlyExitClassifier.*has none"):
        pipe("a text", early_exit={"entropy": 0.1})
    model = early_exit.add_exits(_classifier())
    exiting = kbert.pipeline("text-classification", model=model)
    with pytest.raises(ValueError, match="early exit's batch shrinks"):
        exiting("a text", early_exit={"entropy": 0.1}, jit_compile=True)
    with pytest.raises(ValueError, match="the onnx export holds the full model"):
        exiting.export(str(tmp_path / "onnx"), format="onnx", early_exit={"entropy": 0.1})
    with pytest.raises(ValueError, match="early_exit="):
        exiting("a text", early_exit=0.1)
