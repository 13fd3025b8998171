"""MobileBERT pretraining model: masked LM (widened output table) + next-sentence prediction."""

import keras

from kbert.models.bert.bert_pretrainer import BertPretrainer
from kbert.models.mobile_bert.mobile_bert_masked_lm_head import MobileBertMaskedLMHead
from kbert.models.pretrainer import masked_lm_head


def mobile_bert_masked_lm_head(backbone, name="mlm_head"):
    """A `MobileBertMaskedLMHead` tied to `backbone`'s 128-wide token table."""
    return masked_lm_head(backbone, name, head_class=MobileBertMaskedLMHead)


@keras.saving.register_keras_serializable(package="kbert")
class MobileBertPretrainer(BertPretrainer):
    """Masked-LM and next-sentence heads on a `MobileBertBackbone`, as transformers'
    `MobileBertForPreTraining`: the MLM transform is `hidden_size` wide and scores against
    the tied token table widened by `hidden_size - embedding_size` own rows
    (`MobileBertMaskedLMHead`); NSP is a dense layer on the pooled output. Loss, labels,
    metrics and outputs are `BertPretrainer`'s.

    Args:
        backbone: a `MobileBertBackbone`.
        next_sentence_prediction: `False` trains the masked LM alone.
    """

    make_masked_lm_head = staticmethod(mobile_bert_masked_lm_head)
