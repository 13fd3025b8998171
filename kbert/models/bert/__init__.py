from kbert.models.bert.bert_backbone import BertBackbone
from kbert.models.bert.bert_config import BertConfig
from kbert.models.bert.bert_pretrainer import BertPretrainer

__all__ = ["BertBackbone", "BertConfig", "BertPretrainer"]
