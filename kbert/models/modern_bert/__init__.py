from kbert.models.modern_bert.modern_bert_backbone import ModernBertBackbone
from kbert.models.modern_bert.modern_bert_config import ModernBertConfig
from kbert.models.modern_bert.modern_bert_layers import ModernBertPredictionHead
from kbert.models.modern_bert.modern_bert_pretrainer import ModernBertPretrainer
from kbert.models.family import Family

FAMILY = Family.of(ModernBertConfig, ModernBertBackbone, ModernBertPretrainer,
                   classifier_heads=("cls", "mean"))

__all__ = ["FAMILY", "ModernBertBackbone", "ModernBertConfig", "ModernBertPredictionHead",
           "ModernBertPretrainer"]
