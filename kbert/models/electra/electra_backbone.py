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
        ```python
        backbone = kbert.presets.load("electra_small", head=None, weights=None)
        ```
    """

    config_class = ElectraConfig
