"""Distillation: DistilBERT's recipe (`Distiller`, `initialize_student`) and TinyBERT's
(`TinyBertDistiller`), for students and teachers of any family they take."""

from kbert.models.distillation.distiller import Distiller, initialize_student, student_layers
from kbert.models.distillation.tiny_bert_distiller import (
    TinyBertDistiller, backbone_states, tiny_bert_layers,
)

__all__ = ["Distiller", "TinyBertDistiller", "backbone_states", "initialize_student",
           "student_layers", "tiny_bert_layers"]
