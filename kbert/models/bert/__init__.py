from kbert.models.bert.bert_backbone import BertBackbone
from kbert.models.bert.bert_config import BertConfig
from kbert.models.bert.bert_pretrainer import BertPretrainer
from kbert.models.family import Family

FAMILY = Family.of(BertConfig, BertBackbone, BertPretrainer, classifier_head="pooled")

__all__ = ["FAMILY", "BertBackbone", "BertConfig", "BertPretrainer"]
