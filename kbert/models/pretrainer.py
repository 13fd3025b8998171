"""What every kbert pretraining model shares: compile with the loss built in, the masked-LM loss."""

import keras
from keras import ops

from kbert import _replicas
from kbert.layers import MaskedLMHead
from kbert.models.backbone import layer_from_config
from kbert.models.internals import model_with_internals
from kbert.models.optimizers import NO_DECAY_NAMES


def masked_lm_head(backbone, name="mlm_head", head_class=MaskedLMHead):
    """A `head_class` (`MaskedLMHead`) tied to `backbone`'s token table, configured as the
    backbone."""
    return layer_from_config(head_class, backbone.config,
                             token_embedding=backbone.token_embedding,
                             dtype=backbone.dtype_policy, name=name)


class Pretrainer:
    """Mixed into `BertPretrainer`, `ReplacedTokenDetection` (ELECTRA's and DeBERTa-v3's RTD)
    and the distillers (before `keras.Model`): they compute their own loss in `compute_loss`,
    so `compile` takes no `loss`.

    A mixin and not a `keras.Model` subclass: Keras rewrites the bases of a class built as a
    functional model to `Functional`, which would then reach the subclassed `Distiller` too.
    Subclasses call `_init_pretrainer` (or `_add_mlm_metrics`) for `masked_lm_loss`, and name what their config saves
    in `config_models` and `config_settings`.
    """

    # Whether the family has a sentence-level head (NSP / SOP) for `head="pretrainer"`.
    has_sentence_head = False
    # The models `get_config` saves (serialized) and `from_config` rebuilds, and the other
    # constructor arguments it saves: attributes of the same names.
    config_models = ("backbone",)
    config_settings = ()

    def with_internals(self, hidden_states=True, attentions=True):
        """A `keras.Model` on this model's layers (its weights, not a copy) whose outputs are
        this model's outputs dict, then its `backbone`'s `hidden_states` and/or `attentions`
        (ELECTRA's and DeBERTa-v3's replaced-token detection: the discriminator's, on the
        corrupted input), as `Backbone.with_internals` gives them. This model stays as it
        is."""
        return model_with_internals(self, hidden_states, attentions)

    def compile(self, optimizer="adamw", loss=None, **kwargs):
        """Like `keras.Model.compile`, with the pretraining loss built in.

        `optimizer="adamw"` (the default) is AdamW(1e-4, weight decay 0.01, epsilon 1e-6,
        global gradient norm clipped at 1.0). For any optimizer with weight decay, LayerNorm
        weights and biases are excluded from the decay, as in BERT (also after a reload:
        Keras does not save the exclusion list).
        """
        if loss is not None:
            raise ValueError(
                f"{type(self).__name__} computes its own loss; got loss={loss!r}. "
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

    def _init_pretrainer(self, backbone, **attributes):
        """Keeps `backbone`, its dtype policy and `attributes` (layers and settings, by
        name), and adds the masked-LM metrics."""
        # Keras decides on loss scaling (mixed_float16) from the compiled model's own policy.
        self.dtype_policy = backbone.dtype_policy
        self.backbone = backbone
        for name, value in attributes.items():
            setattr(self, name, value)
        self._add_mlm_metrics()

    def _add_mlm_metrics(self):
        """The masked-LM loss and accuracy that `masked_lm_loss` updates."""
        self.mlm_loss_tracker = keras.metrics.Mean(name="mlm_loss")
        self.mlm_accuracy = keras.metrics.SparseCategoricalAccuracy(name="mlm_accuracy")

    def _check_labels(self, y, needed):
        if not isinstance(y, dict) or any(key not in y for key in needed):
            got = sorted(y) if isinstance(y, dict) else type(y).__name__
            raise ValueError(
                f"{type(self).__name__} needs labels as a dict with keys {list(needed)} "
                f"(mask_weights optional); got {got}."
            )
        return y

    def weighted_mean(self, values, weights, tracker, floor=1.0):
        """sum(values * weights) / the global sum of `weights` (at least `floor`).

        Under tf.distribute each replica returns its share of the global mean (Keras sums
        the replicas' gradients): a sum over its own examples, divided by the global weight.
        `tracker` gets the share times the replica count, so that its mean over replicas is
        the global value. One replica (default strategy, JAX): the plain weighted mean.
        """
        _, replicas = _replicas.replica_id_and_count()
        mean = _replicas.weighted_share(values, weights, floor)
        tracker.update_state(mean * replicas)
        return mean

    def masked_lm_loss(self, y, logits):
        """Mean cross-entropy over the masked positions, weighted by `mask_weights`, as
        `weighted_mean` (updates `mlm_loss_tracker` and `mlm_accuracy`).

        Returns: (loss, weights [B, P] float32).
        """
        logits = ops.cast(logits, "float32")  # [B, P, V]
        mask_ids = y["mask_ids"]
        weights = y.get("mask_weights")
        weights = ops.ones(ops.shape(mask_ids)) if weights is None else weights
        weights = ops.cast(weights, "float32")
        token_losses = keras.losses.sparse_categorical_crossentropy(
            mask_ids, logits, from_logits=True
        )  # [B, P]
        # google-research/bert adds 1e-5 to the denominator; max() keeps an all-padding batch at 0.
        loss = self.weighted_mean(token_losses, weights, self.mlm_loss_tracker, floor=1e-5)
        self.mlm_accuracy.update_state(mask_ids, logits, sample_weight=weights)
        return loss, weights

    def add_regularization(self, loss):
        """`loss` plus the layers' regularizers (identical on every replica, so shared)."""
        return _replicas.with_regularization(loss, self.losses)

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable}
        config.update({name: keras.saving.serialize_keras_object(getattr(self, name))
                       for name in self.config_models})
        config.update({name: getattr(self, name) for name in self.config_settings})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in cls.config_models:
            if isinstance(config.get(key), dict):
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)
