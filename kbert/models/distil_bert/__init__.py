from kbert.models.distil_bert.distil_bert_backbone import DistilBertBackbone
from kbert.models.distil_bert.distil_bert_config import DistilBertConfig
from kbert.models.distil_bert.distil_bert_pretrainer import DistilBertPretrainer

__all__ = ["DistilBertBackbone", "DistilBertConfig", "DistilBertPretrainer"]
