"""BERT pretraining model: masked LM + next-sentence prediction, with its own loss."""

import keras
from keras import ops

from kbert.layers import NextSentenceHead
from kbert.models.backbone import int_inputs
from kbert.models.pretrainer import Pretrainer, masked_lm_head

LABEL_KEYS = ("mask_ids", "next_sentence_labels")  # and the optional "mask_weights"


@keras.saving.register_keras_serializable(package="kbert")
class BertPretrainer(Pretrainer, keras.Model):
    """Masked-LM (+ optional next-sentence) heads on a `BertBackbone`, trained by `fit`.

    The loss needs no `compile(loss=...)`: it is BERT's `L = L_MLM + L_NSP`, where `L_MLM` is
    the mean cross-entropy over the masked positions weighted by `mask_weights`
    (sum(w * ce) / sum(w)) and `L_NSP` the mean cross-entropy of the 2-way sentence label.
    `fit` and `evaluate` report `loss`, `mlm_loss`, `mlm_accuracy` and, with NSP, `nsp_loss`
    and `nsp_accuracy`.

    Args:
        backbone: a `BertBackbone`.
        next_sentence_prediction: `False` trains the masked LM alone (RoBERTa style);
            `None` (the default): the family's sentence head if it has one.

    Inputs (a dict): the backbone's `token_ids`, `segment_ids`, `padding_mask` [B, S] and
        `mask_positions` int [B, P].
    Labels (a dict): `mask_ids` int [B, P], `mask_weights` float [B, P] (0 for padded
        predictions; all ones if left out), and with NSP `next_sentence_labels` int [B] or
        [B, 1] (0: B follows A, 1: B is random).
    Outputs (a dict): `mlm_logits` [B, P, V] and, with NSP, `nsp_logits` [B, 2].

    Example:
        ```python
        pretrainer = kbert.presets.load("bert_tiny")
        pretrainer.compile(optimizer=keras.optimizers.AdamW(1e-4))
        # pretrainer.fit(features_and_labels): see kbert.data.pretraining_dataset
        ```
    """

    has_sentence_head = True
    config_settings = ("next_sentence_prediction",)
    # `backbone -> MaskedLMHead`; a family with another output layer sets its own.
    make_masked_lm_head = staticmethod(masked_lm_head)

    def __init__(self, backbone, next_sentence_prediction=None, **kwargs):
        if next_sentence_prediction is None:
            next_sentence_prediction = self.has_sentence_head
        if next_sentence_prediction and not self.has_sentence_head:
            raise ValueError(
                f"{type(self).__name__} has no sentence head: next_sentence_prediction must "
                "be False."
            )
        config = backbone.config

        # === Layers ===
        mlm_head = type(self).make_masked_lm_head(backbone)
        nsp_head = None
        if next_sentence_prediction:
            nsp_head = NextSentenceHead(
                initializer_range=config.initializer_range,
                dtype=backbone.dtype_policy,
                name="nsp_head",
            )

        # === Functional model ===
        inputs, features = self.backbone_graph(backbone)
        inputs.update(int_inputs(("mask_positions",)))
        outputs = {"mlm_logits": mlm_head(features["sequence_output"], inputs["mask_positions"])}
        if nsp_head is not None:
            outputs["nsp_logits"] = nsp_head(features["pooled_output"])  # [B, 2]
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self._init_pretrainer(backbone,
                              next_sentence_prediction=bool(next_sentence_prediction),
                              mlm_head=mlm_head, nsp_head=nsp_head)
        if nsp_head is not None:
            self.nsp_loss_tracker = keras.metrics.Mean(name="nsp_loss")
            self.nsp_accuracy = keras.metrics.SparseCategoricalAccuracy(name="nsp_accuracy")

    def backbone_graph(self, backbone):
        """The graph's start: its inputs (a dict, the backbone's) and the backbone's outputs
        on them. `ModernBertPretrainer` adds packed documents' ids."""
        return dict(backbone.input), backbone(backbone.input)

    def _labels(self, y):
        needed = LABEL_KEYS if self.next_sentence_prediction else LABEL_KEYS[:1]
        return self._check_labels(y, needed)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        y = self._labels(y)
        loss, _ = self.masked_lm_loss(y, y_pred["mlm_logits"])
        if self.next_sentence_prediction:
            nsp_logits = ops.cast(y_pred["nsp_logits"], "float32")  # [B, 2]
            labels = ops.reshape(y["next_sentence_labels"], (-1,))
            nsp_losses = keras.losses.sparse_categorical_crossentropy(
                labels, nsp_logits, from_logits=True
            )
            nsp_loss = self.weighted_mean(nsp_losses, ops.ones_like(nsp_losses),
                                          self.nsp_loss_tracker)
            self.nsp_accuracy.update_state(labels, nsp_logits)
            loss = loss + nsp_loss
        return self.add_regularization(loss)
