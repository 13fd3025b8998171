"""Extractive question answering (SQuAD): start and end logits over the tokens."""

import keras
from keras import ops

from kbert.tasks import task as task_lib
from kbert.tasks._heads import LARGE_NEGATIVE

OUTPUTS = ("start_logits", "end_logits")
# transformers' label names; `fit` also takes labels keyed by the output names.
LABELS = ("start_positions", "end_positions")


@keras.saving.register_keras_serializable(package="kbert")
class SpanLogits(keras.layers.Layer):
    """Splits `qa_outputs`' [B, S, 2] into start and end logits and masks the padding.

    Call args:
        inputs: float tensor [B, S, 2].
        padding_mask: int or bool tensor [B, S], 1 for real tokens.

    Returns:
        (start_logits, end_logits), float32 [B, S] each; padded positions hold -1e9, so that
        they never win and take no probability in the loss.
    """

    def call(self, inputs, padding_mask):
        logits = ops.cast(inputs, "float32")
        keep = ops.cast(padding_mask, "bool")
        start = ops.where(keep, logits[..., 0], LARGE_NEGATIVE)  # [B, S]
        end = ops.where(keep, logits[..., 1], LARGE_NEGATIVE)  # [B, S]
        return start, end

    def compute_output_spec(self, inputs, padding_mask):
        # Two tensors, not one twice: a functional model keys its outputs by tensor, and the
        # same one twice gives both outputs the end logits.
        shape = tuple(inputs.shape[:-1])
        return (keras.KerasTensor(shape, dtype="float32"),
                keras.KerasTensor(shape, dtype="float32"))


@keras.saving.register_keras_serializable(package="kbert")
class QuestionAnswerer(task_lib.Task, keras.Model):
    """Sequence output -> `qa_outputs` dense(2) -> start and end logits, as transformers'
    `*ForQuestionAnswering` (DistilBERT's has a `dropout` before `qa_outputs`; ModernBERT's
    puts its `prediction_head`, dense + activation + LayerNorm, before that dropout).

    Padded positions get a logit of -1e9 (in float32), so that they never win an argmax and
    take no probability in the loss. Position 0 ([CLS]) is a real token: SQuAD v2 points
    unanswerable questions at it.

    Args:
        backbone: a kbert backbone of any family (`kbert.models.Backbone`).
        dropout: rate of the dropout before `qa_outputs`; `None`: transformers' default
            (DistilBERT 0.1, ModernBERT its config's `classifier_dropout`, the other
            families 0).

    Inputs (a dict): the backbone's inputs, int [B, S] (question as segment 0, context as
        segment 1).
    Labels: a dict `start_positions`, `end_positions`, int [B] (token indices), or a tuple
        (start, end), or a dict keyed by the output names.
    Outputs (a dict): `start_logits`, `end_logits`, float32 [B, S].

    `compile()` defaults: BERT's fine-tuning AdamW (2e-5), the loss of BERT's run_squad.py
    (the mean of the start and the end sparse softmax cross-entropy, weights 0.5 and 0.5),
    and the accuracy of each (`start_logits_accuracy`, `end_logits_accuracy`).
    """

    def __init__(self, backbone, dropout=None, preprocessor=None, **kwargs):
        dropout = task_lib.head_dropout(backbone, "question_answerer", dropout)
        policy = backbone.dtype_policy

        # === Layers ===
        dropout_layer = keras.layers.Dropout(dropout, dtype=policy, name="dropout")
        qa_outputs = task_lib.dense_layer(backbone, 2, "qa_outputs")
        span_logits = SpanLogits(dtype=policy, name="span_logits")
        prediction_head = task_lib.prediction_head(backbone)

        # === Functional model ===
        inputs = task_lib.backbone_inputs(backbone)
        sequence = backbone(inputs)["sequence_output"]  # [B, S, H]
        if prediction_head is not None:
            sequence = prediction_head(sequence)  # [B, S, H]
        logits = qa_outputs(dropout_layer(sequence))  # [B, S, 2]
        start, end = span_logits(logits, inputs["padding_mask"])  # [B, S] each
        super().__init__(inputs=inputs, outputs={"start_logits": start, "end_logits": end},
                         **kwargs)

        # === Config ===
        self._init_task(backbone, preprocessor, dropout=dropout)
        self.prediction_head = prediction_head
        self.qa_outputs = qa_outputs

    def head_layers(self):
        return {"qa_outputs": self.qa_outputs}

    def default_loss(self):
        loss = {name: keras.losses.SparseCategoricalCrossentropy(from_logits=True)
                for name in OUTPUTS}
        return loss, {name: 0.5 for name in OUTPUTS}

    def default_metrics(self):
        return {name: [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
                for name in OUTPUTS}, None

    def _labels(self, y):
        """Labels keyed by the output names, which Keras matches to the losses."""
        if isinstance(y, (tuple, list)) and len(y) == 2:
            return dict(zip(OUTPUTS, y))
        if isinstance(y, dict) and all(key in y for key in LABELS):
            return {output: y[label] for output, label in zip(OUTPUTS, LABELS)}
        if isinstance(y, dict) and all(key in y for key in OUTPUTS):
            return {output: y[output] for output in OUTPUTS}
        got = sorted(y) if isinstance(y, dict) else type(y).__name__
        raise ValueError(f"QuestionAnswerer needs labels {list(LABELS)} (a dict or a tuple); "
                         f"got {got}.")

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return super().compute_loss(x=x, y=self._labels(y), y_pred=y_pred,
                                    sample_weight=sample_weight, training=training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return super().compute_metrics(x, self._labels(y), y_pred, sample_weight=sample_weight)
