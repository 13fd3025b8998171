"""Early exit for text classification: a classifier with an exit head ("off-ramp") after
each layer, and inference that stops running an example once it is answered.

DeeBERT (Xin et al., 2020) puts a small classifier after each transformer layer and stops
when its prediction's entropy is under a threshold; PABEE (Zhou et al., 2020) stops when the
exits' predictions have agreed for `patience` layers in a row. `EarlyExitClassifier` is a
`TextClassifier` (its graph, `predict` and exports are the full model's, as are pipelines
without the `early_exit` option) with those exit heads beside it; `exit_early` runs the
backbone layer by layer, and the rows that exit leave the batch: later layers run only on
the rows still in it. The last layer's answer is the classifier's own, so a threshold no
prediction meets (entropy 0) is the full model. (`ops.nonzero` gives the rows still running:
a shape only the run knows, so `exit_early` runs eagerly or in a TensorFlow graph, not under
`jax.jit` or XLA.)

Training the exits (DeeBERT's second stage, the backbone and classifier frozen) and choosing
a threshold on validation data are `kbert.training.early_exit`'s.
"""

import keras
from keras import ops

from kbert.layers import _utils
from kbert.models.backbone import Internals
from kbert.tasks import task as task_lib
from kbert.tasks._heads import TokenPooling
from kbert.tasks.text_classification.model import TextClassifier

EXIT_MODES = ("entropy", "patience")
# The inputs of the backbone's blocks with a row per example (the rest, such as DeBERTa's
# relative embeddings, are shared by the batch).
_PER_ROW = ("padding_mask", "document_ids")


def check_exit(setting):
    """`setting` as `exit_early` takes it: a dict with one of {"entropy": t} (t >= 0: exit
    when the prediction's entropy in nats is below t; 0 never exits) or {"patience": p} (p >=
    1: exit when p exits in a row agreed with the one before). Returns (mode, value)."""
    if not isinstance(setting, dict) or len(setting) != 1 or next(iter(setting)) not in \
            EXIT_MODES:
        raise ValueError(f"early_exit={setting!r}: a dict with one of {{'entropy': threshold}} "
                         f"or {{'patience': layers}}.")
    (mode, value), = setting.items()
    if mode == "entropy":
        return mode, _utils.check_positive_float("early_exit entropy", value, allow_zero=True)
    return mode, _utils.check_positive_int("early_exit patience", value)


@keras.saving.register_keras_serializable(package="kbert")
class ExitHead(keras.layers.Layer):
    """DeeBERT's off-ramp: a layer's hidden states pooled ("mean": over the real tokens;
    "cls": the first token, as BERT's pooler) -> dense(H, tanh) -> dropout ->
    dense(num_classes).

    Call args: hidden states [B, S, H], padding mask [B, S]. Returns logits [B, N].
    """

    def __init__(self, num_classes, pooling="mean", dropout=0.1, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.num_classes = _utils.check_positive_int("num_classes", num_classes)
        if pooling not in ("cls", "mean"):
            raise ValueError(f"Unknown exit pooling {pooling!r}. Allowed: 'cls', 'mean'.")
        self.pooling = pooling
        self.dropout = _utils.check_rate("dropout", dropout)
        self.initializer_range = _utils.check_positive_float("initializer_range",
                                                             initializer_range)
        self.pool = TokenPooling(pooling, dtype=self.dtype_policy, name="pool")
        self.dropout_layer = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy,
                                                  name="dropout")

    def build(self, inputs_shape, padding_mask_shape=None):
        hidden = inputs_shape[-1]
        initializer = _utils.truncated_normal(self.initializer_range)
        self.dense = keras.layers.Dense(hidden, activation="tanh", kernel_initializer=initializer,
                                        dtype=self.dtype_policy, name="dense")
        self.classifier = keras.layers.Dense(self.num_classes, kernel_initializer=initializer,
                                             dtype=self.dtype_policy, name="classifier")
        self.dense.build((None, hidden))
        self.classifier.build((None, hidden))
        self.built = True

    def call(self, inputs, padding_mask, training=None):
        return self.from_pooled(self.pool(inputs, padding_mask), training=training)

    def from_pooled(self, pooled, training=None):
        """The head after its pooling: pooled states [B, H] -> logits [B, N]."""
        x = self.dense(pooled)
        return self.classifier(self.dropout_layer(x, training=training))

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return (inputs_shape[0], self.num_classes)

    def get_config(self):
        config = super().get_config()
        config.update({"num_classes": self.num_classes, "pooling": self.pooling,
                       "dropout": self.dropout, "initializer_range": self.initializer_range})
        return config


@keras.saving.register_keras_serializable(package="kbert")
class EarlyExitClassifier(TextClassifier):
    """A single-label `TextClassifier` with an `ExitHead` after each of `exit_layers`.

    Its graph (call, `predict`, `fit`, exports, `kbert.pipeline`) is the `TextClassifier`'s:
    the full model. `exit_early` is the early-exit forward; `kbert.pipeline(...,
    early_exit={"entropy": t})` and a SavedModel exported with that option run it.

    Args (besides `TextClassifier`'s):
        exit_layers: the layers (1 .. num_layers - 1, counted from the first block) with an
            exit head after them; `None`: every layer but the last, whose answer is the
            classifier's.
        exit_pooling: "mean" (the default: over the real tokens) or "cls" (the first token,
            as DeeBERT's off-ramps). On all-MiniLM-L6-v2 fine-tuned for sentiment, the first
            token's exits after layers 1-4 did no better than the majority class (0.59) where
            the mean's reached 0.76-0.84.
        exit_dropout: the exit heads' dropout; `None`: the classifier's.
    """

    def __init__(self, backbone, *args, exit_layers=None, exit_pooling=None,
                 exit_dropout=None, **kwargs):
        super().__init__(backbone, *args, **kwargs)
        if self.problem_type != "single_label":
            raise ValueError(f"Early exit takes a single-label classifier (an exit answers "
                             f"when its softmax is sure); got problem_type="
                             f"{self.problem_type!r}.")
        count = backbone.config.num_layers
        if count < 2:
            raise ValueError(f"Early exit needs a backbone of 2 or more layers (an exit after "
                             f"each but the last, whose answer is the classifier's); this one "
                             f"has {count}.")
        allowed = f"layers 1 .. {count - 1} of a {count}-layer backbone"
        if exit_layers is None:
            exit_layers = list(range(1, count))
        if isinstance(exit_layers, (str, bytes)) or not hasattr(exit_layers, "__iter__"):
            raise ValueError(f"exit_layers={exit_layers!r}: a list of {allowed}.")
        exit_layers = list(exit_layers)
        for layer in exit_layers:
            if isinstance(layer, bool) or not isinstance(layer, int) or not 1 <= layer < count:
                raise ValueError(f"exit_layers has {layer!r}: exit heads go after {allowed} "
                                 "(the last layer's answer is the classifier's).")
        if not exit_layers or len(set(exit_layers)) != len(exit_layers):
            raise ValueError(f"exit_layers={exit_layers!r}: one or more of {allowed}, each once.")
        exit_pooling = exit_pooling or "mean"
        exit_dropout = self.dropout if exit_dropout is None else exit_dropout
        self.exit_layers = sorted(exit_layers)
        self.exit_pooling = exit_pooling
        self.exit_dropout = _utils.check_rate("exit_dropout", exit_dropout)
        self._task_settings += ("exit_layers", "exit_pooling", "exit_dropout")
        hidden = backbone.config.hidden_size
        self.exit_heads = []
        for layer in self.exit_layers:
            head = ExitHead(self.num_classes, exit_pooling, self.exit_dropout,
                            backbone.config.initializer_range, dtype=backbone.dtype_policy,
                            name=f"exit_{layer}")
            head.build((None, None, hidden))
            self.exit_heads.append(head)

    def exits_model(self, include_final=True):
        """A `keras.Model` on this model's layers: the inputs -> every exit's logits [B, E, N]
        in float32, in the order of `exit_layers`, then (`include_final`) the classifier's."""
        inputs = task_lib.backbone_inputs(self.backbone)
        outputs = self.backbone.with_internals(hidden_states=True, attentions=False)(inputs)
        hidden, mask = outputs["hidden_states"], inputs["padding_mask"]
        logits = [head(self.exit_input(hidden[layer]), mask)
                  for layer, head in zip(self.exit_layers, self.exit_heads)]
        if include_final:
            features = {name: outputs[name] for name in self.backbone.output}
            logits.append(self.head_parts(features, mask))
        stacked = ops.stack([ops.cast(x, "float32") for x in logits], axis=1)
        return keras.Model(inputs, stacked, name=f"{self.name}_exits")

    def exit_input(self, hidden):
        """What an exit head reads of a layer's hidden states: ModernBERT's through its
        backbone's final LayerNorm (what its classifier reads of the last layer), others' as
        they are."""
        norm = getattr(self.backbone, "final_layer_norm", None)
        return hidden if norm is None else norm(hidden)

    def without_exits(self):
        """The `TextClassifier` alone on the same backbone (its weights, not a copy), the
        classifier's weights copied: what transformers' `*ForSequenceClassification` holds."""
        config = self.get_config()
        for name in ("exit_layers", "exit_pooling", "exit_dropout"):
            config.pop(name)
        config["backbone"], config["preprocessor"] = self.backbone, self.preprocessor
        result = TextClassifier.from_config(config)
        copy_head(self, result)
        return result

    def exit_early(self, inputs, entropy=None, patience=None):
        """The early-exit forward on `inputs` (the model's input dict, real tensors): each
        row runs layer by layer until an exit answers it, and leaves the batch there.

        entropy: exit where the softmax's entropy (nats) is below this (0: never).
        patience: exit where the predicted class has stayed the same for this many exits
            after the first that predicted it (PABEE).
        One of the two. Returns {"logits": float32 [B, N] (each row's exit's), "exit_layer":
        int32 [B] (the layers it ran: an exit layer, or num_layers for the classifier's)}.
        """
        given = {name: value for name, value in (("entropy", entropy),
                                                 ("patience", patience)) if value is not None}
        mode, value = check_exit(given)
        inputs = {name: ops.convert_to_tensor(inputs[name]) for name in self.input}
        backbone = self.backbone
        tracker = _Exiting(self, mode, value, ops.shape(inputs["token_ids"])[0])
        layers = {name: getattr(backbone, name) for name in backbone._layer_names}
        features = backbone.network(backbone.config, layers, inputs, tracker)
        mask = ops.take(inputs["padding_mask"], tracker.rows, axis=0)
        final = ops.cast(self.head_parts(features, mask), "float32")
        tracker.answer(final, ops.ones_like(tracker.rows, dtype="bool"),
                       backbone.config.num_layers)
        return {"logits": tracker.logits, "exit_layer": tracker.exit_layer}


def copy_head(source, target):
    """Copies the weights of `source`'s layers other than its backbone to `target`'s layers of
    the same names."""
    for layer in source.layers:
        if layer is not source.backbone and layer.weights:
            target.get_layer(layer.name).set_weights(layer.get_weights())


def entropy_of(logits):
    """The softmax's entropy (nats) of float logits [..., N]."""
    log_p = ops.log_softmax(logits, axis=-1)
    return -ops.sum(ops.exp(log_p) * log_p, axis=-1)


class _Exiting(Internals):
    """The backbone's graph run with the exits: after each block with an exit head, the rows
    it answers are kept and leave the batch (`rows`: the batch rows still running)."""

    def __init__(self, model, mode, value, batch):
        super().__init__()
        self.heads = dict(zip(model.exit_layers, model.exit_heads))
        self.exit_input = model.exit_input
        self.mode, self.value = mode, value
        self.rows = ops.arange(batch, dtype="int32")
        self.logits = ops.zeros((batch, model.num_classes), "float32")
        self.exit_layer = ops.zeros((batch,), "int32")
        self.layer = 0
        self.agreed = self.previous = None  # patience: agreeing exits so far, last prediction

    def block(self, block, x, *args, **kwargs):
        kwargs = {name: ops.take(value, self.rows, axis=0)
                  if name in _PER_ROW and value is not None else value
                  for name, value in kwargs.items()}
        x = block(x, *args, **kwargs)
        self.layer += 1
        head = self.heads.get(self.layer)
        if head is None:
            return x
        logits = ops.cast(head(self.exit_input(x), kwargs["padding_mask"]), "float32")
        if self.mode == "entropy":
            done = entropy_of(logits) < self.value
        else:
            predicted = ops.argmax(logits, axis=-1)
            if self.previous is None:
                self.agreed = ops.zeros_like(predicted)
            else:
                self.agreed = ops.where(predicted == self.previous, self.agreed + 1, 0)
            self.previous = predicted
            done = self.agreed >= self.value
        keep = self.answer(logits, done, self.layer)
        if self.previous is not None:
            self.previous = ops.take(self.previous, keep, axis=0)
            self.agreed = ops.take(self.agreed, keep, axis=0)
        return ops.take(x, keep, axis=0)

    def answer(self, logits, done, layer):
        """Keeps `logits` of the running rows that are `done` as their answers at `layer`;
        the rest go on. Returns the positions (in the running rows) of those that go on."""
        answered = ops.cast(ops.nonzero(done)[0], "int32")
        at = ops.expand_dims(ops.take(self.rows, answered, axis=0), -1)  # [k, 1]
        self.logits = ops.scatter_update(self.logits, at, ops.take(logits, answered, axis=0))
        self.exit_layer = ops.scatter_update(
            self.exit_layer, at, ops.full(ops.shape(answered), layer, dtype="int32"))
        keep = ops.cast(ops.nonzero(ops.logical_not(done))[0], "int32")
        self.rows = ops.take(self.rows, keep, axis=0)
        return keep
