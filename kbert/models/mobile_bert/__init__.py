from kbert.models.mobile_bert.mobile_bert_backbone import MobileBertBackbone
from kbert.models.mobile_bert.mobile_bert_config import MobileBertConfig
from kbert.models.mobile_bert.mobile_bert_pretrainer import MobileBertPretrainer

__all__ = ["MobileBertBackbone", "MobileBertConfig", "MobileBertPretrainer"]
