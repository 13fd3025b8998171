from kbert.models.albert.albert_backbone import AlbertBackbone
from kbert.models.albert.albert_config import AlbertConfig
from kbert.models.albert.albert_pretrainer import AlbertPretrainer

__all__ = ["AlbertBackbone", "AlbertConfig", "AlbertPretrainer"]
