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

import dataclasses

import numpy as np

from kbert.tasks.datasets import check_int
from kbert.tasks.fitting import DEFAULT_BATCH_SIZE
from kbert.tasks.text_classification.early_exit import (EXIT_MODES, EarlyExitClassifier,
                                                        TextClassifier, check_exit, copy_head,
                                                        entropy_of)
from kbert.training import exit_training
from kbert.training.exit_training import encoded


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


# epochs and learning rate when not given: frozen training fits the small heads on the
# layers' states computed once (cheap epochs, a rate for heads alone); joint training moves
# the whole model (a rate near fine-tuning's).
DEFAULTS = {False: {"epochs": 3, "learning_rate": 1e-3},
            True: {"epochs": 1, "learning_rate": 1e-4}}


def train_exits(model, x, y=None, epochs=None, batch_size=None, learning_rate=None,
                joint=False, validation_data=None, verbose="auto", *, distill=None,
                temperature=1.0):
    """Trains `model`'s exit heads, AdamW at `learning_rate` (BERT's fine-tuning AdamW: weight
    decay 0.01 but on LayerNorm weights and biases, the gradient norm clipped at 1; constant).
    `x`, `y`: the task's raw inputs and labels, read through the model's preprocessor (in
    batches grouped by length); or a `tf.data` dataset of `(inputs, labels)` batches (class
    ids or label names); in frozen training also token-id features and labels.
    `validation_data`: `(x, y)` or such a dataset.

    joint: False (the default; DeeBERT's second stage): the backbone and the classifier are
        frozen, so the full model's answers stay as they are. One pass over `x` computes
        each exit's input (its layer's states, pooled) and the classifier's logits, in
        inference mode; the heads then train on those for `epochs` (3 by default; learning
        rate 1e-3), which costs little beside that pass. (The pass keeps n x exits x
        hidden_size floats in memory: 7.7 KB a row for 5 exits of 384 wide.)
        True (PABEE's): the backbone, the exits and the classifier trained together on the
        exits' and the classifier's cross-entropies weighted by their layer (a later layer
        weighs more), which makes the early layers' exits surer at some change of the full
        model's answers (1 epoch, learning rate 1e-4 by default).
    distill: frozen training only: the weight in [0, 1] of the classifier's answers against
        the labels in each exit's loss (FastBERT's self-distillation: the KL divergence from
        the classifier's softmax at `temperature` to the exit's, times temperature squared;
        the labels' cross-entropy weighs 1 - distill). 1 by default: an exit learns what the
        full model will answer, which is what exiting early must not change, and `y` may be
        left out (unlabelled text; the History then has no accuracy). docs/early-exit.md
        has the measurements.
    temperature: the distillation's softmax temperature (> 0; frozen training).

    Returns the Keras `History` (loss; accuracy over the exits where there are labels;
    agreement: how often an exit answers as the classifier, frozen training)."""
    model = _checked(model)
    if not isinstance(joint, bool):
        raise ValueError(f"joint={joint!r}: True or False.")
    epochs = check_int("epochs", DEFAULTS[joint]["epochs"] if epochs is None else epochs, 1)
    if learning_rate is None:
        learning_rate = DEFAULTS[joint]["learning_rate"]
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)) or \
            not learning_rate > 0:
        raise ValueError(f"learning_rate={learning_rate!r}: a positive number.")
    if distill is None:
        distill = 0.0 if joint else 1.0
    if isinstance(distill, bool) or not isinstance(distill, (int, float)) or \
            not 0 <= distill <= 1:
        raise ValueError(f"distill={distill!r}: the weight of the classifier's answers, a "
                         "number in [0, 1].")
    if joint and distill:
        raise ValueError(f"distill={distill!r} takes frozen training (joint=False): in joint "
                         "training the classifier moves with the exits. Pass distill=None.")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or \
            not temperature > 0:
        raise ValueError(f"temperature={temperature!r}: a positive number.")
    if joint and temperature != 1.0:
        raise ValueError(f"temperature={temperature!r} is the distillation's, which takes "
                         "frozen training (joint=False).")
    if joint:
        return exit_training.train_joint(model, x, y, epochs, batch_size, learning_rate,
                                         validation_data, verbose)
    return exit_training.train_frozen(model, x, y, epochs, batch_size, learning_rate,
                                      distill, float(temperature), validation_data, verbose)


def _predict_exits(model, features, length, batch_size):
    from kbert.tasks import length_groups

    return length_groups.predict(model.exits_model(), features,
                                 batch_size or DEFAULT_BATCH_SIZE, length)


def all_exits(model, x, batch_size=None):
    """Every exit's logits and the classifier's on `x` (raw inputs through the model's
    preprocessor, or token-id features), in the order of `x`: float32 [n, E + 1, N]."""
    features, length, _ = encoded(_checked(model), x)
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
    features, length, labels = encoded(model, x, y)
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
