"""BERT pretraining model: masked LM + next-sentence prediction, with its own loss."""

import keras
from keras import ops

from kbert import _replicas
from kbert.layers import MaskedLMHead, NextSentenceHead

LABEL_KEYS = ("mask_ids", "mask_weights", "next_sentence_labels")
# BERT decays every weight but LayerNorm's (gamma, beta) and the biases.
NO_DECAY_NAMES = ("bias", "gamma", "beta")


@keras.saving.register_keras_serializable(package="kbert")
class BertPretrainer(keras.Model):
    """Masked-LM (+ optional next-sentence) heads on a `BertBackbone`, trained by `fit`.

    The loss needs no `compile(loss=...)`: it is BERT's `L = L_MLM + L_NSP`, where `L_MLM` is
    the mean cross-entropy over the masked positions weighted by `mask_weights`
    (sum(w * ce) / sum(w)) and `L_NSP` the mean cross-entropy of the 2-way sentence label.
    `fit` and `evaluate` report `loss`, `mlm_loss`, `mlm_accuracy` and, with NSP, `nsp_loss`
    and `nsp_accuracy`.

    Args:
        backbone: a `BertBackbone`.
        next_sentence_prediction: `False` trains the masked LM alone (RoBERTa style).

    Inputs (a dict): the backbone's `token_ids`, `segment_ids`, `padding_mask` [B, S] and
        `mask_positions` int [B, P].
    Labels (a dict): `mask_ids` int [B, P], `mask_weights` float [B, P] (0 for padded
        predictions; all ones if left out), and with NSP `next_sentence_labels` int [B] or
        [B, 1] (0: B follows A, 1: B is random).
    Outputs (a dict): `mlm_logits` [B, P, V] and, with NSP, `nsp_logits` [B, 2].

    Example:
        pretrainer = kbert.presets.load("bert_tiny")
        pretrainer.compile(optimizer=keras.optimizers.AdamW(1e-4))
        pretrainer.fit(dataset_of_features_and_labels, epochs=1)
    """

    # Whether the family has a sentence-level head (NSP / SOP) for `head="pretrainer"`.
    has_sentence_head = True

    def __init__(self, backbone, next_sentence_prediction=True, **kwargs):
        config = backbone.bert_config

        # === Layers ===
        mlm_head = MaskedLMHead(
            vocabulary_size=config.vocabulary_size,
            token_embedding=backbone.token_embedding,
            activation=config.activation,
            layer_norm_epsilon=config.layer_norm_epsilon,
            initializer_range=config.initializer_range,
            dtype=backbone.dtype_policy,
            name="mlm_head",
        )
        nsp_head = None
        if next_sentence_prediction:
            nsp_head = NextSentenceHead(
                initializer_range=config.initializer_range,
                dtype=backbone.dtype_policy,
                name="nsp_head",
            )

        # === Functional model ===
        inputs = dict(backbone.input)
        inputs["mask_positions"] = keras.Input(shape=(None,), dtype="int32", name="mask_positions")
        features = backbone(backbone.input)
        outputs = {"mlm_logits": mlm_head(features["sequence_output"], inputs["mask_positions"])}
        if nsp_head is not None:
            outputs["nsp_logits"] = nsp_head(features["pooled_output"])  # [B, 2]
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        # Keras decides on loss scaling (mixed_float16) from the compiled model's own policy.
        self.dtype_policy = backbone.dtype_policy
        self.backbone = backbone
        self.next_sentence_prediction = bool(next_sentence_prediction)
        self.mlm_head = mlm_head
        self.nsp_head = nsp_head
        self.mlm_loss_tracker = keras.metrics.Mean(name="mlm_loss")
        self.mlm_accuracy = keras.metrics.SparseCategoricalAccuracy(name="mlm_accuracy")
        if nsp_head is not None:
            self.nsp_loss_tracker = keras.metrics.Mean(name="nsp_loss")
            self.nsp_accuracy = keras.metrics.SparseCategoricalAccuracy(name="nsp_accuracy")

    def compile(self, optimizer="adamw", loss=None, **kwargs):
        """Like `keras.Model.compile`, with the pretraining loss built in.

        `optimizer="adamw"` (the default) is AdamW(1e-4, weight decay 0.01, epsilon 1e-6,
        global gradient norm clipped at 1.0). For any optimizer with weight decay, LayerNorm
        weights and biases are excluded from the decay, as in BERT (also after a reload:
        Keras does not save the exclusion list).
        """
        if loss is not None:
            raise ValueError(
                f"BertPretrainer computes its own loss (MLM + NSP); got loss={loss!r}. "
                "Call compile() without `loss`."
            )
        if optimizer == "adamw":
            optimizer = keras.optimizers.AdamW(
                learning_rate=1e-4, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0
            )
        if isinstance(optimizer, keras.optimizers.Optimizer) and optimizer.weight_decay:
            optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
        super().compile(optimizer=optimizer, **kwargs)

    def compile_from_config(self, config):
        # Keras skips models with a custom compile(); this one takes the saved arguments as is.
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def _labels(self, y):
        needed = LABEL_KEYS if self.next_sentence_prediction else LABEL_KEYS[:2]
        if not isinstance(y, dict) or "mask_ids" not in y or (
            self.next_sentence_prediction and "next_sentence_labels" not in y
        ):
            got = sorted(y) if isinstance(y, dict) else type(y).__name__
            raise ValueError(
                f"BertPretrainer needs labels as a dict with keys {list(needed)} "
                f"(mask_weights optional); got {got}."
            )
        return y

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        # Under tf.distribute each replica returns its share of the global loss (Keras sums
        # the replicas' gradients): sums over its own examples, divided by global counts. The
        # metric trackers get the share times the replica count, so their mean over replicas
        # is the global value. One replica (default strategy, JAX): the plain means.
        _, replicas = _replicas.replica_id_and_count()
        y = self._labels(y)
        logits = ops.cast(y_pred["mlm_logits"], "float32")  # [B, P, V]
        mask_ids = y["mask_ids"]
        weights = y.get("mask_weights")
        weights = ops.ones(ops.shape(mask_ids)) if weights is None else weights
        weights = ops.cast(weights, "float32")
        token_losses = keras.losses.sparse_categorical_crossentropy(
            mask_ids, logits, from_logits=True
        )  # [B, P]
        # google-research/bert adds 1e-5 to the denominator; max() keeps an all-padding batch at 0.
        total_weight = _replicas.global_sum(ops.sum(weights))
        mlm_loss = ops.sum(token_losses * weights) / ops.maximum(total_weight, 1e-5)
        self.mlm_loss_tracker.update_state(mlm_loss * replicas)
        self.mlm_accuracy.update_state(mask_ids, logits, sample_weight=weights)
        loss = mlm_loss
        if self.next_sentence_prediction:
            nsp_logits = ops.cast(y_pred["nsp_logits"], "float32")  # [B, 2]
            labels = ops.reshape(y["next_sentence_labels"], (-1,))
            nsp_losses = keras.losses.sparse_categorical_crossentropy(
                labels, nsp_logits, from_logits=True
            )
            count = _replicas.global_sum(ops.cast(ops.shape(nsp_losses)[0], "float32"))
            nsp_loss = ops.sum(nsp_losses) / ops.maximum(count, 1.0)
            self.nsp_loss_tracker.update_state(nsp_loss * replicas)
            self.nsp_accuracy.update_state(labels, nsp_logits)
            loss = loss + nsp_loss
        if self.losses:  # regularizers added by layers, identical on every replica
            regularization = ops.sum(ops.stack([ops.cast(l, "float32") for l in self.losses]))
            loss = loss + regularization / replicas
        return loss

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "next_sentence_prediction": self.next_sentence_prediction,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)
