"""Models of the BERT family (keras.ops only: any Keras backend)."""

from kbert.models.bert import BertBackbone, BertConfig, BertPretrainer

__all__ = ["BertBackbone", "BertConfig", "BertPretrainer"]
