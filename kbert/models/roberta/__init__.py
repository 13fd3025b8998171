from kbert.models.roberta.roberta_backbone import RobertaBackbone
from kbert.models.roberta.roberta_config import RobertaConfig
from kbert.models.roberta.roberta_pretrainer import RobertaPretrainer
from kbert.models.family import Family

FAMILY = Family.of(RobertaConfig, RobertaBackbone, RobertaPretrainer, tokenizer="bpe",
                   pair_layout="roberta", cls_activation="tanh")

__all__ = ["FAMILY", "RobertaBackbone", "RobertaConfig", "RobertaPretrainer"]
