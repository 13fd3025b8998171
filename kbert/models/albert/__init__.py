from kbert.models.albert.albert_backbone import AlbertBackbone
from kbert.models.albert.albert_config import AlbertConfig
from kbert.models.albert.albert_pretrainer import AlbertPretrainer
from kbert.models.family import Family

FAMILY = Family.of(AlbertConfig, AlbertBackbone, AlbertPretrainer, tokenizer="sentencepiece",
                   classifier_head="pooled",
                   head_dropout={"classifier": 0.1, "token_classifier": 0.1})

__all__ = ["FAMILY", "AlbertBackbone", "AlbertConfig", "AlbertPretrainer"]
