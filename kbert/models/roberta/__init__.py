from kbert.models.roberta.roberta_backbone import RobertaBackbone
from kbert.models.roberta.roberta_config import RobertaConfig
from kbert.models.roberta.roberta_pretrainer import RobertaPretrainer

__all__ = ["RobertaBackbone", "RobertaConfig", "RobertaPretrainer"]
