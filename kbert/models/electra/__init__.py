from kbert.models.electra.electra_backbone import ElectraBackbone
from kbert.models.electra.electra_config import ElectraConfig

__all__ = ["ElectraBackbone", "ElectraConfig"]
