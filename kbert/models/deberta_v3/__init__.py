from kbert.models.deberta_v3.deberta_v3_backbone import DebertaV3Backbone
from kbert.models.deberta_v3.deberta_v3_config import DebertaV3Config
from kbert.models.deberta_v3.deberta_v3_pretrainer import DebertaV3Pretrainer
from kbert.models.deberta_v3.deberta_v3_rtd_pretrainer import DebertaV3RtdPretrainer
from kbert.models.family import Family

FAMILY = Family.of(DebertaV3Config, DebertaV3Backbone, DebertaV3Pretrainer,
                   tokenizer="sentencepiece")

__all__ = ["FAMILY", "DebertaV3Backbone", "DebertaV3Config", "DebertaV3Pretrainer",
           "DebertaV3RtdPretrainer"]
