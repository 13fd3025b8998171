"""ALBERT encoder: factorized embedding, cross-layer parameter sharing."""

import keras

from kbert.models.albert.albert_config import AlbertConfig
from kbert.models.bert.bert_backbone import BertBackbone


@keras.saving.register_keras_serializable(package="kbert")
class AlbertBackbone(BertBackbone):
    """ALBERT encoder: `embedding_size`-wide tables projected to `hidden_size`, and
    `num_groups` transformer blocks shared by `num_layers` layers, then BERT's tanh pooler.

    Args: the fields of `AlbertConfig` (validated there), plus `dtype` and the usual
        `keras.Model` keyword arguments.

    Inputs and outputs: as `BertBackbone` (`token_ids`, `segment_ids`, `padding_mask` ->
        `sequence_output` [B, S, H], `pooled_output` [B, H]).

    Example:
        backbone = kbert.presets.load("albert_base", head=None, weights=None)
    """

    def __init__(
        self,
        vocabulary_size,
        num_layers,
        hidden_size,
        num_heads,
        intermediate_size,
        activation="gelu_approximate",
        dropout=0.0,
        attention_dropout=0.0,
        max_sequence_length=512,
        type_vocab_size=2,
        initializer_range=0.02,
        layer_norm_epsilon=1e-12,
        embedding_size=128,
        num_groups=1,
        dtype=None,
        **kwargs,
    ):
        config = AlbertConfig(
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
            num_groups=num_groups,
        )
        self._build(config, dtype, **kwargs)
