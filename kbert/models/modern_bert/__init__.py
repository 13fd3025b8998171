from kbert.models.modern_bert.modern_bert_backbone import ModernBertBackbone
from kbert.models.modern_bert.modern_bert_config import ModernBertConfig
from kbert.models.modern_bert.modern_bert_layers import ModernBertPredictionHead
from kbert.models.modern_bert.modern_bert_pretrainer import ModernBertPretrainer

__all__ = ["ModernBertBackbone", "ModernBertConfig", "ModernBertPredictionHead",
           "ModernBertPretrainer"]
