"""ModernBERT's masked-LM model (transformers' `ModernBertForMaskedLM`)."""

import keras

from kbert.models.bert.bert_pretrainer import BertPretrainer
from kbert.models.modern_bert.modern_bert_layers import ModernBertMaskedLMHead
from kbert.models.pretrainer import masked_lm_head


def modern_bert_masked_lm_head(backbone, name="mlm_head"):
    """A `ModernBertMaskedLMHead` tied to `backbone`'s token table."""
    return masked_lm_head(backbone, name, head_class=ModernBertMaskedLMHead)


@keras.saving.register_keras_serializable(package="kbert")
class ModernBertPretrainer(BertPretrainer):
    """The masked-LM head on a `ModernBertBackbone`, trained by `fit` like `BertPretrainer`:
    transformers' `ModernBertForMaskedLM` head (dense -> `classifier_activation` ->
    LayerNorm -> logits against the tied token table + the decoder bias), scored at the
    masked positions only. No sentence-level objective (`next_sentence_prediction` must be
    False).

    Inputs: `token_ids`, `padding_mask`, `mask_positions`; labels `mask_ids`, `mask_weights`.
    """

    has_sentence_head = False
    make_masked_lm_head = staticmethod(modern_bert_masked_lm_head)
