from kbert.models.electra.electra_backbone import ElectraBackbone
from kbert.models.electra.electra_config import ElectraConfig
from kbert.models.electra.electra_generator import ElectraGenerator
from kbert.models.electra.electra_pretrainer import ElectraMaskedLM, ElectraPretrainer
from kbert.models.family import Family

FAMILY = Family.of(ElectraConfig, ElectraBackbone, ElectraPretrainer)

__all__ = ["FAMILY", "ElectraBackbone", "ElectraConfig", "ElectraGenerator", "ElectraMaskedLM",
           "ElectraPretrainer"]
