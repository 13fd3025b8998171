from kbert.models.distil_bert.distil_bert_backbone import DistilBertBackbone
from kbert.models.distil_bert.distil_bert_config import DistilBertConfig
from kbert.models.distil_bert.distil_bert_pretrainer import DistilBertPretrainer
from kbert.models.family import Family

FAMILY = Family.of(DistilBertConfig, DistilBertBackbone, DistilBertPretrainer,
                   head_dropout={"classifier": 0.2, "question_answerer": 0.1})

__all__ = ["FAMILY", "DistilBertBackbone", "DistilBertConfig", "DistilBertPretrainer"]
