"""Training the exit heads of an `EarlyExitClassifier` (`kbert.training.early_exit
.train_exits` checks the arguments and calls these): frozen, on each exit's input and the
classifier's logits computed once (`exit_features`), the labels' cross-entropy and the
classifier's answers distilled (FastBERT's self-distillation); or jointly with the model, on
the exits' and the classifier's cross-entropies weighted by depth (PABEE's)."""

import keras
import numpy as np
from keras import ops

from kbert.models.optimizers import create_optimizer
from kbert.tasks import task as task_lib
from kbert.tasks._heads import TokenPooling
from kbert.tasks.fitting import DEFAULT_BATCH_SIZE, model_inputs
from kbert.tasks.preprocessor import label_ids


def encoded(model, x, y=None):
    """(features the model takes, their length, the labels as class ids [n] or None) of `x`
    (raw inputs through the model's preprocessor, or token-id features) and `y` (ids or
    names)."""
    if model.preprocessor is None and not isinstance(x, dict):
        _raw(model, x)  # raw inputs and no preprocessor: refused by name
    if model._takes_raw(x):
        data = model._encode(x, y)
        features, length = (model_inputs(model, data.features),
                            model.preprocessor.sequence_length)
        labels = None if y is None else data.targets
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


def optimizer(learning_rate):
    # BERT's fine-tuning AdamW (kbert's: the gradient norm clipped after the replicas' sum),
    # constant: a stream's length may be unknown here.
    return create_optimizer("adamw", learning_rate, decay="constant")


def train_joint(model, x, y, epochs, batch_size, learning_rate, validation_data, verbose):
    import tensorflow as tf

    if y is None and not hasattr(x, "element_spec"):
        raise ValueError("train_exits needs labels: give y, or a tf.data dataset of (inputs, "
                         "labels) batches.")
    trainer = model.exits_model(include_final=True)
    depth = model.exit_layers + [model.backbone.config.num_layers]
    count = len(depth)
    weights = tf.constant(np.asarray(depth) / np.sum(depth) * count, tf.float32)

    def loss(labels, logits):  # [B, count], [B, count, N]
        per_exit = keras.losses.sparse_categorical_crossentropy(labels, logits,
                                                                from_logits=True)
        return tf.reduce_mean(per_exit * weights, axis=-1)

    def tiled(inputs, labels):  # one label per exit
        return inputs, tf.tile(tf.reshape(labels, [-1, 1]), [1, count])

    if hasattr(x, "element_spec"):
        train, steps = x, None
    else:
        train, steps = model.training_batches(_raw(model, x), y, batch_size, epochs,
                                              "train_exits")
    if validation_data is not None and not hasattr(validation_data, "element_spec"):
        validation_data = model._validation(_raw(model, validation_data),
                                            batch_size or DEFAULT_BATCH_SIZE)
    train = train.map(tiled)
    if validation_data is not None:
        validation_data = validation_data.map(tiled)
    # Keras decides on loss scaling (mixed_float16) from the compiled model's own policy.
    trainer.dtype_policy = model.backbone.dtype_policy
    trainer.compile(optimizer=optimizer(learning_rate), loss=loss,
                    metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    return trainer.fit(train, epochs=epochs, steps_per_epoch=steps,
                       validation_data=validation_data, shuffle=False, verbose=verbose)


def _raw(model, data):
    if model.preprocessor is None:
        raise ValueError("train_exits reads raw inputs through the model's preprocessor, and "
                         "this model has none: give a tf.data dataset of (inputs, labels) "
                         "batches.")
    return data


def train_frozen(model, x, y, epochs, batch_size, learning_rate, distill, temperature,
                 validation_data, verbose):
    def check_labels(given):
        if not given and distill < 1:
            raise ValueError(f"train_exits needs labels with distill={distill!r} (the labels "
                             "weigh 1 - distill): give y, or distill=1.")

    check_labels(y is not None or hasattr(x, "element_spec"))  # before the pass, where known
    pooled, final, labels = exit_features(model, x, y, batch_size)
    check_labels(labels is not None)  # a dataset's
    count = len(model.exit_layers)

    def targets(final, labels):  # [n, exits, 1 + N]: the label, then the classifier's logits
        column = np.zeros((len(final), 1), np.float32) if labels is None else \
            np.asarray(labels, np.float32).reshape(-1, 1)
        return np.repeat(np.concatenate([column, final], -1)[:, None], count, axis=1)

    def loss(target, logits):  # [B, exits, 1 + N], [B, exits, N]
        total = 0.0
        if distill < 1:
            total += (1 - distill) * keras.losses.sparse_categorical_crossentropy(
                ops.cast(target[..., 0], "int32"), logits, from_logits=True)
        if distill > 0:
            teacher = ops.log_softmax(target[..., 1:] / temperature, axis=-1)
            student = ops.log_softmax(logits / temperature, axis=-1)
            total += distill * temperature ** 2 * ops.sum(
                ops.exp(teacher) * (teacher - student), axis=-1)
        return ops.mean(total, axis=-1)

    def accuracy(target, logits):
        return ops.mean(ops.cast(ops.equal(ops.argmax(logits, -1),
                                           ops.cast(target[..., 0], "int64")), "float32"))

    def agreement(target, logits):
        return ops.mean(ops.cast(ops.equal(ops.argmax(logits, -1),
                                           ops.argmax(target[..., 1:], -1)), "float32"))

    validation = None
    if validation_data is not None:
        if isinstance(validation_data, tuple) and len(validation_data) != 2:
            raise ValueError(f"validation_data on raw inputs is (x, y); got a tuple of "
                             f"{len(validation_data)} (sample weights are not taken).")
        vx, vy = validation_data if isinstance(validation_data, tuple) else \
            (validation_data, None)
        v_pooled, v_final, v_labels = exit_features(model, vx, vy, batch_size)
        if v_labels is None:
            raise ValueError("validation_data needs labels: give (x, y) or a dataset of "
                             "(inputs, labels) batches.")
        validation = (v_pooled, targets(v_final, v_labels))
    inputs = keras.Input((count, pooled.shape[-1]))
    trainer = keras.Model(inputs, PooledExits(model.exit_heads)(inputs))
    trainer.dtype_policy = model.backbone.dtype_policy  # loss scaling, as above
    trainer.compile(optimizer=optimizer(learning_rate), loss=loss,
                    metrics=([accuracy] if labels is not None else []) + [agreement])
    return trainer.fit(pooled, targets(final, labels), batch_size=batch_size or
                       DEFAULT_BATCH_SIZE, epochs=epochs, shuffle=True,
                       validation_data=validation, verbose=verbose)


def exit_features(model, x, y=None, batch_size=None):
    """What frozen exit training reads, computed once in inference mode: (each exit's input,
    its layer's states pooled as its head pools them: float32 [n, exits, H]; the classifier's
    logits: float32 [n, N]; the labels as class ids [n], or None). `x`, `y` as
    `train_exits` takes them; a dataset is read once."""
    import tensorflow as tf

    features_model = _features_model(model)
    if not hasattr(x, "element_spec"):
        features, length, labels = encoded(model, x, y)
        from kbert.tasks import length_groups

        out = length_groups.predict(features_model, features,
                                    batch_size or DEFAULT_BATCH_SIZE, length)
        return out["pooled"], out["final"], labels
    if y is not None:
        raise ValueError("A tf.data dataset holds its labels: give y=None.")
    forward = tf.function(lambda inputs: features_model(inputs, training=False),
                          reduce_retracing=True)
    pooled, final, labels = [], [], []
    for batch in x:
        inputs, batch_labels, weights = keras.utils.unpack_x_y_sample_weight(batch)
        if weights is not None:
            raise ValueError("train_exits takes (inputs, labels) batches; this dataset's "
                             "have sample weights too.")
        out = forward({name: inputs[name] for name in model.input})
        pooled.append(out["pooled"].numpy())
        final.append(out["final"].numpy())
        if batch_labels is not None:
            batch_labels = np.asarray(batch_labels).ravel().tolist()
            if len(batch_labels) != len(pooled[-1]):
                raise ValueError(f"A batch of {len(pooled[-1])} inputs has "
                                 f"{len(batch_labels)} labels: give one class per input.")
            labels.append(label_ids([v.decode() if isinstance(v, bytes) else v
                                     for v in batch_labels],
                                    model.label_names, model.num_classes))
    if not pooled:
        raise ValueError("train_exits got an empty dataset.")
    if labels and len(labels) != len(pooled):
        raise ValueError("Some batches of the dataset have labels and some not.")
    return (np.concatenate(pooled), np.concatenate(final),
            np.concatenate(labels).astype(np.int64) if labels else None)


def _features_model(model):
    """inputs -> {"pooled": each exit's pooled input [B, exits, H], "final": the classifier's
    logits [B, N]}, both float32."""
    inputs = task_lib.backbone_inputs(model.backbone)
    outputs = model.backbone.with_internals(hidden_states=True, attentions=False)(inputs)
    hidden, mask = outputs["hidden_states"], inputs["padding_mask"]
    pool = TokenPooling(model.exit_pooling, name="exit_pooling")  # as each ExitHead's
    pooled = ops.stack([pool(model.exit_input(hidden[layer]), mask)
                        for layer in model.exit_layers], axis=1)
    features = {name: outputs[name] for name in model.backbone.output}
    final = ops.cast(model.head_parts(features, mask), "float32")
    return keras.Model(inputs, {"pooled": pooled, "final": final},
                       name=f"{model.name}_exit_features")


class PooledExits(keras.layers.Layer):
    """The exit heads after their pooling: [B, exits, H] -> float32 logits [B, exits, N]
    (the heads' own weights)."""

    def __init__(self, heads, **kwargs):
        super().__init__(**kwargs)
        self.heads = list(heads)

    def call(self, pooled, training=None):
        return ops.stack([ops.cast(head.from_pooled(pooled[:, i], training=training),
                                   "float32") for i, head in enumerate(self.heads)], axis=1)

    def compute_output_shape(self, shape):
        return (shape[0], len(self.heads), self.heads[0].num_classes)
