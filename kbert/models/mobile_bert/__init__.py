from kbert.models.mobile_bert.mobile_bert_backbone import MobileBertBackbone
from kbert.models.mobile_bert.mobile_bert_config import MobileBertConfig
from kbert.models.mobile_bert.mobile_bert_pretrainer import MobileBertPretrainer
from kbert.models.family import Family

FAMILY = Family.of(MobileBertConfig, MobileBertBackbone, MobileBertPretrainer,
                   classifier_head="pooled")

__all__ = ["FAMILY", "MobileBertBackbone", "MobileBertConfig", "MobileBertPretrainer"]
