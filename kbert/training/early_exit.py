"""Early exit on a fine-tuned text classifier, as DeeBERT trains it: `add_exits` puts an
exit head after each layer (`kbert.tasks.text_classification.early_exit`), `train_exits`
trains them on the task's data with the backbone and the classifier frozen (DeeBERT's second
stage: the full model's answers do not change), and `choose` picks the exit setting
(an entropy threshold, or PABEE's patience) that answers validation data with the fewest
layers while losing at most `max_drop` of the full model's accuracy.

`all_exits` and `simulate` are the numbers behind `choose`: every exit's logits, computed
once, and the exit each setting takes by the rules of `EarlyExitClassifier.exit_early` (its
entropy, `entropy_of`; its patience counter, in NumPy).
"""

import contextlib
import dataclasses

import numpy as np

from kbert.models.optimizers import create_optimizer
from kbert.training import layer_wise
from kbert.tasks.datasets import check_int
from kbert.tasks.fitting import DEFAULT_BATCH_SIZE, model_inputs
from kbert.tasks.preprocessor import label_ids
from kbert.tasks.text_classification.early_exit import (EXIT_MODES, EarlyExitClassifier,
                                                        TextClassifier, check_exit, copy_head,
                                                        entropy_of)


def add_exits(classifier, exit_layers=None, exit_pooling=None, exit_dropout=None):
    """An `EarlyExitClassifier` on `classifier`'s backbone (the same object: its weights),
    with its settings and preprocessor, its head's weights copied, and new exit heads after
    `exit_layers` (default: every layer but the last); not compiled. Train the exits with
    `train_exits` (with `joint=True`, the shared backbone is trained: `classifier` then
    answers with it too)."""
    if not isinstance(classifier, TextClassifier):
        raise ValueError(f"Early exit takes a kbert TextClassifier; got "
                         f"{type(classifier).__name__}.")
    if isinstance(classifier, EarlyExitClassifier):
        raise ValueError("This classifier has exit heads already (exit_layers="
                         f"{classifier.exit_layers}).")
    config = classifier.get_config()
    config["backbone"], config["preprocessor"] = classifier.backbone, classifier.preprocessor
    result = EarlyExitClassifier.from_config({
        **config, "exit_layers": exit_layers, "exit_pooling": exit_pooling,
        "exit_dropout": exit_dropout})
    copy_head(classifier, result)
    return result


def _checked(model):
    if not isinstance(model, EarlyExitClassifier):
        raise ValueError(f"This needs an EarlyExitClassifier (kbert.training.early_exit."
                         f"add_exits); got {type(model).__name__}.")
    return model


def train_exits(model, x, y=None, epochs=1, batch_size=None, learning_rate=1e-4,
                joint=False, validation_data=None, verbose="auto"):
    """Trains `model`'s exit heads on labelled data, AdamW at `learning_rate`. `x`, `y`: the
    task's raw inputs and labels, read through the model's preprocessor in shuffled batches
    grouped by length as `fit` reads them; or a `tf.data` dataset of `(inputs, labels)`
    batches. `validation_data`: `(x, y)` or such a dataset. The optimizer is BERT's fine-tuning
    AdamW (weight decay 0.01 but on LayerNorm weights and biases, the gradient norm clipped at
    1) at a constant learning rate.

    joint: False (DeeBERT's second stage): the backbone and the classifier frozen, so the
        full model's answers stay as they are; the loss is the mean of the exits'
        cross-entropies. True (PABEE's): the backbone, the exits and the classifier trained
        together on the exits' and the classifier's cross-entropies weighted by their layer
        (a later layer weighs more), which makes the early layers' exits surer at some
        change of the full model's answers (a rate near fine-tuning's: 1e-4 in
        `tools/benchmark.py sparse`).

    Returns the Keras `History` (loss, and accuracy over the exits)."""
    import keras
    import tensorflow as tf

    model = _checked(model)
    epochs = check_int("epochs", epochs, 1)
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)) or \
            not learning_rate > 0:
        raise ValueError(f"learning_rate={learning_rate!r}: a positive number.")
    if y is None and not hasattr(x, "element_spec"):
        raise ValueError("train_exits needs labels: give y, or a tf.data dataset of (inputs, "
                         "labels) batches.")
    trainer = model.exits_model(include_final=joint)
    depth = model.exit_layers + ([model.backbone.config.num_layers] if joint else [])
    count = len(depth)
    weights = tf.constant(np.asarray(depth) / np.sum(depth) * count, tf.float32)

    def loss(labels, logits):  # [B, count], [B, count, N]
        per_exit = keras.losses.sparse_categorical_crossentropy(labels, logits,
                                                                from_logits=True)
        return tf.reduce_mean(per_exit * (weights if joint else 1.0), axis=-1)

    def tiled(inputs, labels):  # one label per exit
        return inputs, tf.tile(tf.reshape(labels, [-1, 1]), [1, count])

    def raw(data):
        if model.preprocessor is None:
            raise ValueError("train_exits reads raw inputs through the model's preprocessor, "
                             "and this model has none: give a tf.data dataset of (inputs, "
                             "labels) batches.")
        return data

    if hasattr(x, "element_spec"):
        train, steps = x, None
    else:
        train, steps = model.training_batches(raw(x), y, batch_size, epochs, "train_exits")
    if validation_data is not None and not hasattr(validation_data, "element_spec"):
        validation_data = model._validation(raw(validation_data),
                                            batch_size or DEFAULT_BATCH_SIZE)
    train = train.map(tiled)
    if validation_data is not None:
        validation_data = validation_data.map(tiled)
    with contextlib.nullcontext() if joint else layer_wise.frozen(model.backbone):
        # BERT's fine-tuning AdamW (kbert's: the gradient norm clipped after the replicas'
        # sum), constant: a stream's length may be unknown here.
        optimizer = create_optimizer("adamw", learning_rate, decay="constant")
        trainer.compile(
            optimizer=optimizer, loss=loss,
            metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
        return trainer.fit(train, epochs=epochs, steps_per_epoch=steps,
                           validation_data=validation_data, shuffle=False, verbose=verbose)


def _encoded(model, x, y=None):
    """(features the model takes, their length, the labels as class ids [n] or None) of `x`
    (raw inputs through the model's preprocessor, or token-id features) and `y` (ids or
    names)."""
    if model._takes_raw(x):
        encoded = model._encode(x, y)
        features, length = (model_inputs(model, encoded.features),
                            model.preprocessor.sequence_length)
        labels = None if y is None else encoded.targets
    else:
        features = model_inputs(model, x)
        length, labels = np.asarray(features["token_ids"]).shape[1], y
    if labels is None:
        return features, length, None
    labels = np.asarray(labels).ravel().tolist()
    rows = len(features["token_ids"])
    if len(labels) != rows:
        raise ValueError(f"{len(labels)} labels for {rows} inputs: give one class per input.")
    return features, length, label_ids(labels, model.label_names, model.num_classes)


def _predict_exits(model, features, length, batch_size):
    from kbert.tasks import length_groups

    return length_groups.predict(model.exits_model(), features,
                                 batch_size or DEFAULT_BATCH_SIZE, length)


def all_exits(model, x, batch_size=None):
    """Every exit's logits and the classifier's on `x` (raw inputs through the model's
    preprocessor, or token-id features), in the order of `x`: float32 [n, E + 1, N]."""
    features, length, _ = _encoded(_checked(model), x)
    return _predict_exits(model, features, length, batch_size)


def _entropy(logits):
    """`entropy_of`, the rule `exit_early` exits by, on NumPy logits."""
    import keras

    return keras.ops.convert_to_numpy(entropy_of(logits))


def simulate(logits, exit_layers, num_layers, entropy=None, patience=None):
    """What `exit_early` answers, from every exit's logits `logits` [n, E + 1, N] (`all_exits`)
    of a model with `exit_layers` in a backbone of `num_layers`: (predicted class [n], exit
    layer [n])."""
    given = {name: value for name, value in (("entropy", entropy), ("patience", patience))
             if value is not None}
    mode, value = check_exit(given)
    logits = np.asarray(logits, np.float32)
    layers = np.asarray(list(exit_layers) + [num_layers])
    if mode == "entropy":
        done = _entropy(logits) < value  # [n, E + 1]
    else:
        predicted = logits.argmax(-1)
        agreed = np.zeros(len(logits), int)
        done = np.zeros(predicted.shape, bool)
        for i in range(1, predicted.shape[1]):
            agreed = np.where(predicted[:, i] == predicted[:, i - 1], agreed + 1, 0)
            done[:, i] = agreed >= value
    done[:, -1] = True  # the classifier answers the rest
    first = done.argmax(axis=1)
    return logits[np.arange(len(logits)), first].argmax(-1), layers[first]


@dataclasses.dataclass
class ExitChoice:
    """`choose`'s answer. `setting`: the `early_exit` option ({"entropy": t} or {"patience":
    p}); `accuracy` and `mean_layers` at it; `full_accuracy`: the classifier's; `curve`: each
    setting tried as (value, accuracy, mean layers), the full model's first."""

    setting: dict
    accuracy: float
    mean_layers: float
    full_accuracy: float
    num_layers: int
    curve: list


def choose(model, x, y, max_drop=0.01, mode="entropy", batch_size=None, logits=None):
    """The exit setting of `mode` ("entropy" or "patience") that runs the fewest layers on
    average over the labelled validation data `x`, `y` while its accuracy stays within
    `max_drop` (a fraction: 0.01 is one point) of the full model's. `logits`: `all_exits`'
    answer on `x`, when already computed. Returns an `ExitChoice`."""
    model = _checked(model)
    if isinstance(max_drop, bool) or not isinstance(max_drop, (int, float)) or \
            not 0 <= max_drop < 1:
        raise ValueError(f"max_drop={max_drop!r}: the accuracy one may lose, a fraction in "
                         "[0, 1).")
    if mode not in EXIT_MODES:
        raise ValueError(f"Unknown mode {mode!r}. Allowed: {', '.join(EXIT_MODES)}.")
    features, length, labels = _encoded(model, x, y)
    if labels is None:
        raise ValueError("choose needs the validation labels: give y.")
    if logits is None:
        logits = _predict_exits(model, features, length, batch_size)
    count = model.backbone.config.num_layers
    full = float(np.mean(logits[:, -1].argmax(-1) == labels))
    if mode == "entropy":
        seen = _entropy(logits)[:, :-1].ravel()
        values = [0.0] + sorted({float(v) for v in np.quantile(seen, np.linspace(0.02, 1, 50))})
    else:
        values = list(range(len(model.exit_layers), 0, -1))  # the most patient (slowest) first
    curve = []
    for value in values:
        predicted, layers = simulate(logits, model.exit_layers, count, **{mode: value})
        curve.append((value, float(np.mean(predicted == labels)), float(np.mean(layers))))
    within = [point for point in curve if point[1] >= full - max_drop]
    best = min(within, key=lambda point: (point[2], -point[1]))
    return ExitChoice({mode: best[0]}, best[1], best[2], full, count, curve)
