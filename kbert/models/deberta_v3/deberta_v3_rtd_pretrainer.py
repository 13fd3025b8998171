"""DeBERTa-v3 pretraining: ELECTRA's replaced-token detection with gradient-disentangled
embedding sharing (GDES)."""

import keras
from keras import ops

from kbert.models.deberta_v3.deberta_v3_backbone import DebertaV3Backbone
from kbert.models.electra.replaced_token_detection import (
    ReplacedTokenDetection, check_loss_weights,
)
from kbert.models.pretrainer import masked_lm_head


@keras.saving.register_keras_serializable(package="kbert")
class DebertaV3RtdPretrainer(ReplacedTokenDetection):
    """Replaced-token detection on a `DebertaV3Backbone` with gradient-disentangled embedding
    sharing (He et al. 2021, DeBERTa-v3), trained by `fit`.

    ELECTRA's objective and loss (`ReplacedTokenDetection`, as `ElectraPretrainer`: the
    generator's masked-LM loss + `rtd_loss_weight` x the discriminator's replaced-token loss),
    with DeBERTa-v3's two models:

    - the generator is a `DebertaV3Backbone` as wide as the discriminator and
      `generator_layers_fraction` as deep (1/2, as in the paper), with its own token table
      `E_G` and a masked-LM head tied to it;
    - the discriminator (`backbone`) looks its tokens up in `stop_gradient(E_G) + E_delta`:
      its own token table is the delta `E_delta`, set to zero when the pretrainer is made.
      The generator's table learns from the masked-LM loss alone; the replaced-token loss
      moves only the delta (and the rest of the discriminator).

    After pretraining, `discriminator()` gives the discriminator as a stand-alone backbone
    (its table `E_G + E_delta`) to fine-tune, save or export.

    Args:
        backbone: a `DebertaV3Backbone`, the discriminator; its token table becomes the
            delta (zeroed).
        generator_layers_fraction: generator depth / discriminator depth, in (0, 1].
        mlm_loss_weight, rtd_loss_weight: the weights of the two losses (1 and 50).
        seed: seed of the token sampling.

    Inputs (a dict): `token_ids`, `padding_mask` and `mask_positions` int [B, P].
    Labels (a dict): `mask_ids` int [B, P] and optional `mask_weights` [B, P].
    Outputs (a dict): `mlm_logits` [B, P, V] (the generator's), `replaced_token_ids` [B, S]
        and `rtd_logits` [B, S].
    """

    config_settings = ReplacedTokenDetection.config_settings + ("generator_layers_fraction",)

    def __init__(self, backbone, generator_layers_fraction=0.5, mlm_loss_weight=1.0,
                 rtd_loss_weight=50.0, seed=None, **kwargs):
        if not isinstance(backbone, DebertaV3Backbone):
            raise ValueError(f"DebertaV3RtdPretrainer needs a DebertaV3Backbone, got "
                             f"{type(backbone).__name__}.")
        # Checked before GDES changes the backbone (the base class checks them again).
        check_loss_weights(mlm_loss_weight, rtd_loss_weight)
        fraction = generator_layers_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not (
                0 < fraction <= 1):
            raise ValueError(f"generator_layers_fraction must be in (0, 1], got {fraction!r}.")
        config = backbone.config
        policy = backbone.dtype_policy

        # === Layers ===
        generator = DebertaV3Backbone.from_config(
            config.replace(num_layers=max(1, int(round(config.num_layers * fraction)))),
            dtype=policy, name="generator")
        mlm_head = masked_lm_head(generator)
        # GDES: the discriminator's table is the delta on the generator's (no gradient).
        delta = backbone.embeddings.token_embedding.embeddings
        delta.assign(ops.zeros(delta.shape, delta.dtype))
        backbone.embeddings.share(generator.embeddings.token_embedding)

        def generate(inputs):
            return generator({"token_ids": inputs["token_ids"],
                              "padding_mask": inputs["padding_mask"]})["sequence_output"]

        # The sampler, the discriminator, its head and the graph: ReplacedTokenDetection's.
        super().__init__(backbone, generator, mlm_head, generate,
                         mlm_loss_weight=mlm_loss_weight, rtd_loss_weight=rtd_loss_weight,
                         seed=seed, **kwargs)

        # === Config ===
        self.generator_layers_fraction = generator_layers_fraction

    def discriminator(self, name=None):
        """The discriminator as a stand-alone `DebertaV3Backbone`: a copy of `backbone` whose
        token table is the generator's plus the delta (what GDES trained)."""
        source = self.backbone
        result = DebertaV3Backbone.from_config(source.config, dtype=source.dtype_policy,
                                               name=name or f"{self.name}_discriminator")
        for target, value in zip(result.weights, source.weights):
            target.assign(value)
        table = (ops.convert_to_tensor(self.generator.embeddings.token_embedding.embeddings)
                 + ops.convert_to_tensor(source.embeddings.token_embedding.embeddings))
        result.embeddings.token_embedding.embeddings.assign(table)
        return result
