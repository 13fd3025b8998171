"""DistilBERT encoder: BERT without segment embeddings and without the pooler."""

import keras

from kbert.models.bert.bert_backbone import BertBackbone
from kbert.models.distil_bert.distil_bert_config import DistilBertConfig


@keras.saving.register_keras_serializable(package="kbert")
class DistilBertBackbone(BertBackbone):
    """DistilBERT encoder: token + position embeddings, `num_layers` post-LN blocks.

    Args: the fields of `DistilBertConfig`, plus `dtype` and the `keras.Model` arguments.

    Inputs (a dict): `token_ids`, `padding_mask`, each int [B, S].
    Outputs (a dict): `sequence_output` [B, S, H]. There is no pooled output.

    Example:
        backbone = kbert.presets.load("distil_bert_base", head=None, weights=None)
    """

    has_pooler = False

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        hidden_size,
        num_heads,
        intermediate_size,
        activation="gelu",
        dropout=0.1,
        attention_dropout=0.1,
        max_sequence_length=512,
        type_vocab_size=0,
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        embedding_size=None,
        dtype=None,
        **kwargs,
    ):
        config = DistilBertConfig(
            vocabulary_size=vocabulary_size,
            num_layers=num_layers,
            hidden_size=hidden_size,
            num_heads=num_heads,
            intermediate_size=intermediate_size,
            activation=activation,
            dropout=dropout,
            attention_dropout=attention_dropout,
            max_sequence_length=max_sequence_length,
            type_vocab_size=type_vocab_size,
            initializer_range=initializer_range,
            layer_norm_epsilon=layer_norm_epsilon,
            embedding_size=embedding_size,
        )
        self._build(config, dtype, **kwargs)
