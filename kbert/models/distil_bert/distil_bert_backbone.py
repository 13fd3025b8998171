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
        ```python
        backbone = kbert.presets.load("distil_bert_base", head=None, weights=None)
        ```
    """

    config_class = DistilBertConfig
    has_pooler = False
