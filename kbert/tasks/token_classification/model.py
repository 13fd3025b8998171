"""Per-token classification (NER, POS tagging) on any kbert backbone."""

import keras
from keras import ops

from kbert.layers import _utils
from kbert.tasks import task as task_lib


@keras.saving.register_keras_serializable(package="kbert")
class TokenClassifier(task_lib.Task, keras.Model):
    """Sequence output -> `dropout` -> `classifier` dense(N) on every token, as transformers'
    `*ForTokenClassification` of every family (ModernBERT's puts its `prediction_head`,
    dense + activation + LayerNorm, before the dropout).

    Labels sit on the first wordpiece of each word; the other pieces and the padding get
    label weight 0 and take no part in the loss and the accuracy. Pass the weights as Keras
    sample weights: `fit(features, labels, sample_weight=label_weights)` or a dataset of
    `(features, labels, label_weights)`. Without them the padding mask is the weight.

    Args:
        backbone: a kbert backbone of any family (`kbert.models.Backbone`).
        num_classes: number of tags; `None` means `len(label_names)`.
        dropout: the head's dropout rate; `None`: transformers' default for the family
            (the backbone's dropout; ALBERT 0.1).
        label_names: a name per tag, e.g. ["O", "B-PER", "I-PER", ...], kept in the config.

    Inputs (a dict): the backbone's inputs, int [B, S].
    Labels: int [B, S]; sample weights float [B, S].
    Outputs: logits [B, S, N].

    `compile()` defaults: BERT's fine-tuning AdamW (2e-5), sparse softmax cross-entropy
    summed over the weighted tokens and divided by the sum of their weights
    (`reduction="mean_with_sample_weight"`), and the weighted token `accuracy`.
    """

    def __init__(self, backbone, num_classes=None, dropout=None, label_names=None,
                 preprocessor=None, **kwargs):
        if num_classes is None and label_names is not None:
            num_classes = len(label_names)
        if num_classes is None:
            raise ValueError("Give `num_classes` (or `label_names`).")
        num_classes = _utils.check_positive_int("num_classes", num_classes)
        label_names = task_lib.check_label_names(label_names, num_classes)
        dropout = task_lib.head_dropout(backbone, "token_classifier", dropout)

        # === Layers ===
        dropout_layer = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy,
                                             name="dropout")
        classifier = task_lib.dense_layer(backbone, num_classes, "classifier")
        prediction_head = task_lib.prediction_head(backbone)

        # === Functional model ===
        inputs = task_lib.backbone_inputs(backbone)
        sequence = backbone(inputs)["sequence_output"]  # [B, S, H]
        if prediction_head is not None:
            sequence = prediction_head(sequence)  # [B, S, H]
        logits = classifier(dropout_layer(sequence))  # [B, S, N]
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self._init_task(backbone, preprocessor, num_classes=num_classes, dropout=dropout,
                        label_names=label_names)
        self.prediction_head = prediction_head
        self.classifier = classifier

    def head_layers(self):
        return {"classifier": self.classifier}

    def default_loss(self):
        # Keras's default reduction divides by B * S, which would shrink the loss with the
        # share of weight-0 tokens; this one is the mean over the labelled tokens.
        return keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight"), None

    def default_metrics(self):
        return None, [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def _weights(self, x, sample_weight):
        if sample_weight is None and isinstance(x, dict) and "padding_mask" in x:
            return ops.cast(x["padding_mask"], "float32")  # [B, S]
        return sample_weight

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return super().compute_loss(x=x, y=y, y_pred=y_pred,
                                    sample_weight=self._weights(x, sample_weight),
                                    training=training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return super().compute_metrics(x, y, y_pred, sample_weight=self._weights(x, sample_weight))
