from kbert.models.modern_bert.modern_bert_backbone import ModernBertBackbone
from kbert.models.modern_bert.modern_bert_config import ModernBertConfig
from kbert.models.modern_bert.modern_bert_layers import ModernBertPredictionHead
from kbert.models.modern_bert.modern_bert_pretrainer import ModernBertPretrainer
from kbert.models.family import Family

# Its tokenizer.json's template says the layout: ModernBERT's is BERT's, mmBERT's (1, 0).
FAMILY = Family.of(ModernBertConfig, ModernBertBackbone, ModernBertPretrainer,
                   tokenizer="tokenizer_json", pair_layout=None,
                   classifier_heads=("cls", "mean"))

__all__ = ["FAMILY", "ModernBertBackbone", "ModernBertConfig", "ModernBertPredictionHead",
           "ModernBertPretrainer"]
