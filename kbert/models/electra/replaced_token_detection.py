"""ELECTRA's objective, replaced-token detection: what `ElectraPretrainer` and DeBERTa-v3's
`DebertaV3RtdPretrainer` share (the sampling, the discriminator's head, the loss)."""

import keras
from keras import ops

from kbert.layers import MaskedTokenSampler, ReplacedTokenHead, _utils
from kbert.layers.masked_token_sampler import scatter_positions
from kbert.models.backbone import int_inputs
from kbert.models.pretrainer import Pretrainer


def check_loss_weights(mlm_loss_weight, rtd_loss_weight):
    """The two loss weights as floats; a ValueError naming a negative or non-number one."""
    return (_utils.check_positive_float("mlm_loss_weight", mlm_loss_weight, allow_zero=True),
            _utils.check_positive_float("rtd_loss_weight", rtd_loss_weight, allow_zero=True))


class ReplacedTokenDetection(Pretrainer, keras.Model):
    """Replaced-token detection (Clark et al. 2020) on a generator's masked-LM logits: the
    base class of `ElectraPretrainer` and `DebertaV3RtdPretrainer`, which differ in their
    generator and in how it shares the discriminator's embeddings.

    A subclass builds its generator and masked-LM head and passes them here with `generate`,
    its generator's forward pass. This class then:

    1. runs the generator on the masked input and samples a token from the masked-LM softmax
       at every masked position (no gradient), written into the input;
    2. runs the discriminator (`backbone`) on the corrupted input, and a `ReplacedTokenHead`
       scores every token. The label is 1 where the token differs from the original; a
       sample that equals the original counts as original.

    Loss: `mlm_loss_weight * L_MLM + rtd_loss_weight * L_RTD`, with `L_RTD` the sigmoid
    cross-entropy averaged over the non-padding tokens (ELECTRA: 1 and 50). `fit` reports
    `loss`, `mlm_loss`, `mlm_accuracy` (the generator's), `rtd_loss` and `rtd_accuracy`.

    Args:
        backbone: the discriminator.
        generator, mlm_head: the generator and its masked-LM head.
        generate: `inputs` (the model's `keras.Input`s by name) -> the generator's sequence
            output [B, S, Hg].
        mlm_loss_weight, rtd_loss_weight: the weights of the two losses.
        seed: seed of the token sampling.

    Inputs (a dict): the backbone's inputs and `mask_positions` int [B, P].
    Labels (a dict): `mask_ids` int [B, P] and optional `mask_weights` [B, P].
    Outputs (a dict): `mlm_logits` [B, P, V] (the generator's), `replaced_token_ids` [B, S]
        (the discriminator's input) and `rtd_logits` [B, S].
    """

    # What every replaced-token detector's config saves; subclasses add their own.
    config_settings = ("mlm_loss_weight", "rtd_loss_weight", "seed")

    def __init__(self, backbone, generator, mlm_head, generate, mlm_loss_weight=1.0,
                 rtd_loss_weight=50.0, seed=None, **kwargs):
        mlm_loss_weight, rtd_loss_weight = check_loss_weights(mlm_loss_weight, rtd_loss_weight)
        config = backbone.config
        policy = backbone.dtype_policy

        # === Layers ===
        sampler = MaskedTokenSampler(seed=seed, dtype=policy, name="sampler")
        rtd_head = ReplacedTokenHead(
            activation=config.activation, initializer_range=config.initializer_range,
            dtype=policy, name="rtd_head",
        )

        # === Functional model ===
        inputs = int_inputs((*backbone.input, "mask_positions"))
        generated = generate(inputs)  # [B, S, Hg]
        mlm_logits = mlm_head(generated, inputs["mask_positions"])  # [B, P, V]
        replaced, _ = sampler(inputs["token_ids"], inputs["mask_positions"], mlm_logits)
        features = backbone({**{name: inputs[name] for name in backbone.input},
                             "token_ids": replaced})
        outputs = {
            "mlm_logits": mlm_logits,
            "replaced_token_ids": replaced,  # [B, S]
            "rtd_logits": rtd_head(features["sequence_output"]),  # [B, S]
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self._init_pretrainer(backbone, generator=generator, mlm_head=mlm_head, sampler=sampler,
                              rtd_head=rtd_head, mlm_loss_weight=mlm_loss_weight,
                              rtd_loss_weight=rtd_loss_weight, seed=seed)
        self.rtd_loss_tracker = keras.metrics.Mean(name="rtd_loss")
        self.rtd_accuracy = keras.metrics.BinaryAccuracy(name="rtd_accuracy", threshold=0.0)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        y = self._check_labels(y, ("mask_ids",))
        mlm_loss, _ = self.masked_lm_loss(y, y_pred["mlm_logits"])
        original = scatter_positions(x["token_ids"], x["mask_positions"], y["mask_ids"])
        labels = ops.cast(ops.not_equal(y_pred["replaced_token_ids"], original), "float32")
        logits = ops.cast(y_pred["rtd_logits"], "float32")  # [B, S]
        mask = ops.cast(x["padding_mask"], "float32")
        token_losses = ops.binary_crossentropy(labels, logits, from_logits=True)  # [B, S]
        rtd_loss = self.weighted_mean(token_losses, mask, self.rtd_loss_tracker)
        # BinaryAccuracy with threshold 0 on the logits: positive logit = "replaced".
        self.rtd_accuracy.update_state(labels, logits, sample_weight=mask)
        loss = self.mlm_loss_weight * mlm_loss + self.rtd_loss_weight * rtd_loss
        return self.add_regularization(loss)
