from kbert.models.distil_bert.distil_bert_backbone import DistilBertBackbone
from kbert.models.distil_bert.distil_bert_config import DistilBertConfig
from kbert.models.distil_bert.distil_bert_pretrainer import DistilBertPretrainer
from kbert.models.distil_bert.distiller import Distiller, initialize_student, student_layers
from kbert.models.distil_bert.tiny_bert_distiller import (
    TinyBertDistiller, backbone_states, tiny_bert_layers,
)

__all__ = ["DistilBertBackbone", "DistilBertConfig", "DistilBertPretrainer", "Distiller",
           "TinyBertDistiller", "backbone_states", "initialize_student", "student_layers",
           "tiny_bert_layers"]
