"""RoBERTa encoder: BERT's layers, positions counted from the padding index + 1, no pooler."""

import keras

from kbert.models.bert.bert_backbone import BertBackbone
from kbert.models.roberta.roberta_config import RobertaConfig


@keras.saving.register_keras_serializable(package="kbert")
class RobertaBackbone(BertBackbone):
    """RoBERTa encoder: token + position (+ one segment) embeddings, `num_layers` post-LN
    blocks, no pooler (the released checkpoints have none that pretraining trained).

    As fairseq and transformers do, the position table has `max_sequence_length + 2` rows:
    row 1 (the padding index) is the padding's position and the tokens count from row 2, so
    that left and right padding give the tokens the same positions. The positions come from
    `padding_mask` (transformers derives them from the pad token's id, which kbert's inputs
    mark in `padding_mask`). The single segment row is added to every token, so there is no
    `segment_ids` input.

    Args: the fields of `RobertaConfig`, plus `dtype` and the `keras.Model` arguments.

    Inputs and outputs: as `DistilBertBackbone` (`token_ids`, `padding_mask` ->
        `sequence_output`; no pooled output).

    Example:
        ```python
        backbone = kbert.presets.load("roberta_base", head=None, weights=None)
        ```
    """

    config_class = RobertaConfig
    has_pooler = False
    has_segment_input = False
    position_offset = 2  # fairseq's padding index (1) + 1
