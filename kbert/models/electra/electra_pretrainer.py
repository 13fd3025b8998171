"""ELECTRA pretraining: a small masked-LM generator corrupts the input, the discriminator
(the backbone) tells replaced tokens from original ones."""

import keras

from kbert.models.backbone import layer_from_config
from kbert.models.bert.bert_pretrainer import BertPretrainer
from kbert.models.electra.electra_generator import ElectraGenerator, generator_size
from kbert.models.electra.replaced_token_detection import ReplacedTokenDetection
from kbert.models.pretrainer import masked_lm_head


@keras.saving.register_keras_serializable(package="kbert")
class ElectraMaskedLM(BertPretrainer):
    """A masked-LM head on an `ElectraBackbone` (Hugging Face's `ElectraForMaskedLM`): what a
    released ELECTRA generator is, and `head="mlm"` for the electra presets."""

    has_sentence_head = False


@keras.saving.register_keras_serializable(package="kbert")
class ElectraPretrainer(ReplacedTokenDetection):
    """Replaced-token detection (Clark et al. 2020) on an `ElectraBackbone`, trained by `fit`.

    1. The generator, a narrower encoder (`generator_hidden_fraction` of the discriminator's
       width, 1/4 by default; one head per 64 units; 4 x hidden feed-forward) on the
       discriminator's own token, position and segment embeddings, predicts the masked
       tokens with a masked-LM head tied to the shared token table.
    2. A token is sampled from its softmax at every masked position (no gradient) and
       written into the input.
    3. The discriminator (`backbone`) reads the corrupted input and a `ReplacedTokenHead`
       scores every token. The label is 1 where the token differs from the original; a
       sample that equals the original counts as original.

    Loss (`ReplacedTokenDetection`, shared with DeBERTa-v3): `mlm_loss_weight * L_MLM +
    rtd_loss_weight * L_RTD`, with `L_RTD` the sigmoid cross-entropy averaged over the
    non-padding tokens (ELECTRA: 1 and 50). `fit` reports `loss`, `mlm_loss`, `mlm_accuracy`
    (the generator's), `rtd_loss` and `rtd_accuracy`.
    After pretraining, `pretrainer.backbone` (also `discriminator()`) is the discriminator to
    fine-tune or export.

    Args:
        backbone: an `ElectraBackbone` (the discriminator).
        generator_hidden_fraction: generator width / discriminator width, in (0, 1].
        generator_layers_fraction: generator depth / discriminator depth, in (0, 1].
        mlm_loss_weight, rtd_loss_weight, seed: as `ReplacedTokenDetection`.

    Inputs, labels and outputs: as `ReplacedTokenDetection` (the backbone's inputs and
        `mask_positions`; `mask_ids`, `mask_weights`; `mlm_logits`, `replaced_token_ids`,
        `rtd_logits`).

    Example:
        ```python
        pretrainer = kbert.presets.load("electra_small", weights=None)
        pretrainer.compile(optimizer=keras.optimizers.AdamW(5e-4))
        # pretrainer.fit(features_and_labels): see kbert.data.pretraining_dataset
        ```
    """

    # What `kbert.models.build(head="mlm")` builds for this family.
    masked_lm_class = ElectraMaskedLM
    config_settings = ReplacedTokenDetection.config_settings + (
        "generator_hidden_fraction", "generator_layers_fraction")

    def __init__(self, backbone, generator_hidden_fraction=0.25, generator_layers_fraction=1.0,
                 mlm_loss_weight=1.0, rtd_loss_weight=50.0, seed=None, **kwargs):
        config = backbone.config
        hidden, layers, heads, intermediate = generator_size(
            config, generator_hidden_fraction, generator_layers_fraction)
        policy = backbone.dtype_policy

        # === Layers ===
        # The discriminator's activation, dropouts, epsilon and initializer.
        generator = layer_from_config(
            ElectraGenerator, config, hidden_size=hidden, num_layers=layers, num_heads=heads,
            intermediate_size=intermediate, dtype=policy, name="generator")
        mlm_head = masked_lm_head(backbone)

        def generate(inputs):
            # The generator reads the discriminator's embeddings before their projection.
            shared = backbone.embeddings(inputs["token_ids"], inputs.get("segment_ids"),
                                         project=False)  # [B, S, E]
            return generator(shared, padding_mask=inputs["padding_mask"])  # [B, S, Hg]

        # The sampler, the discriminator, its head and the graph: ReplacedTokenDetection's.
        super().__init__(backbone, generator, mlm_head, generate,
                         mlm_loss_weight=mlm_loss_weight, rtd_loss_weight=rtd_loss_weight,
                         seed=seed, **kwargs)

        # === Config ===
        self.generator_hidden_fraction = generator_hidden_fraction
        self.generator_layers_fraction = generator_layers_fraction

    def discriminator(self):
        """The discriminator to fine-tune or export: `backbone` itself (it owns its
        embeddings; DeBERTa-v3's pretrainer builds one from two tables)."""
        return self.backbone
