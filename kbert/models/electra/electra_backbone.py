"""ELECTRA encoder (the discriminator): BERT's architecture with an optional embedding width."""

import keras

from kbert.models.bert.bert_backbone import BertBackbone
from kbert.models.electra.electra_config import ElectraConfig


@keras.saving.register_keras_serializable(package="kbert")
class ElectraBackbone(BertBackbone):
    """ELECTRA encoder: embeddings (`embedding_size` wide, projected to `hidden_size` when
    narrower), `num_layers` post-LN blocks and a tanh pooler, as keras-hub's ElectraBackbone.

    Args: the fields of `ElectraConfig`, plus `dtype` and the `keras.Model` arguments.

    Inputs and outputs: as `BertBackbone`.

    Example:
        backbone = kbert.presets.load("electra_small", head=None, weights=None)
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        hidden_size,
        num_heads,
        intermediate_size,
        activation="gelu_approximate",
        dropout=0.1,
        attention_dropout=0.1,
        max_sequence_length=512,
        type_vocab_size=2,
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        embedding_size=None,
        dtype=None,
        **kwargs,
    ):
        config = ElectraConfig(
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
