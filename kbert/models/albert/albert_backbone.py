"""ALBERT encoder: factorized embedding, cross-layer parameter sharing."""

import keras

from kbert.models.albert.albert_config import AlbertConfig
from kbert.models.bert.bert_backbone import BertBackbone


@keras.saving.register_keras_serializable(package="kbert")
class AlbertBackbone(BertBackbone):
    """ALBERT encoder: `embedding_size`-wide tables projected to `hidden_size`, and
    `num_groups` transformer blocks shared by `num_layers` layers, then BERT's tanh pooler.

    It takes the fields of `AlbertConfig` (validated there), plus `dtype` and the usual
        `keras.Model` keyword arguments.

    Inputs and outputs: as `BertBackbone` (`token_ids`, `segment_ids`, `padding_mask` ->
        `sequence_output` [B, S, H], `pooled_output` [B, H]).

    Example:
        ```python
        backbone = kbert.presets.load("albert_base", head=None, weights=None)
        ```
    """

    config_class = AlbertConfig
